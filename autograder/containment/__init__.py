"""The sandbox and its channel: where student code runs, and how the trusted side talks to it.

``zygote`` starts the children, ``sandbox`` is the parent's handle on one child and the child's
main loop, ``isolation`` picks the level (namespaces, uid, rlimits) and ``confine`` applies Landlock
and seccomp, ``cgroups`` bounds a submission's memory and processes. ``probes`` is the child's side
(it runs student code), ``protocol`` and ``wire`` are the typed requests and the byte format,
``replies`` the reply schema, ``frozen`` keeps torch's import out of the garbage collector's way.

May import: the shared facts at the top (``paths``, ``rules``, ``bounds``, ``config``) and itself; never
grading, reports or platforms.
"""
