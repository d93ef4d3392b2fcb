"""The sandbox and its channel: where student code runs, and how the trusted side talks to it.

``zygote`` starts the children, ``sandbox`` is the parent's handle on one child and the child's
main loop, ``isolation`` picks the level (namespaces, uid, rlimits) and the layers, ``jail`` is what
a child does to itself at its level, ``grants`` what a confined child may read, ``kernel`` the libc
calls, ``uids`` hands out sandbox uids and ``sweep`` removes what one left; ``confine`` applies Landlock
and seccomp, ``cgroups`` bounds a submission's memory and processes. ``probes`` is the child's side
(it runs student code), ``protocol`` and ``wire`` are the typed requests and the byte format,
``replies`` the reply schema, ``frozen`` keeps torch's import out of the garbage collector's way.

May import: the shared facts at the top (``paths``, ``rules``, ``bounds``, ``config``) and itself; never
grading, reports or platforms.
"""
