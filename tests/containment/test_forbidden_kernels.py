"""Defence in depth: in the child, torch's attention kernels are switched off at the dispatcher before
the student's code loads (``probes.block_forbidden_kernels``, with the Python tripwires of
``probes.install_tripwires``). A hole in the source scanner then gives the student an error, not points.

Installing the block changes torch for good, so each test runs it in a fresh interpreter.
"""
import json
import subprocess
import sys
import textwrap

import pytest

from autograder import rules
from autograder.containment import probes
from variant_builder import ROOT

pytestmark = pytest.mark.slow  # a fresh interpreter imports torch: about 2 s each

# Each route to a forbidden kernel, as code run after the block is installed. `q`, `x`, `mha` (an
# nn.MultiheadAttention) and `layer` (an nn.TransformerEncoderLayer) are made before it.
ROUTES = {
    "F.scaled_dot_product_attention": "F.scaled_dot_product_attention(q, q, q)",
    "the same, with a gradient": "F.scaled_dot_product_attention(q.clone().requires_grad_(), q, q)",
    "the same, in inference mode": "with torch.inference_mode(): F.scaled_dot_product_attention(q, q, q)",
    "torch.ops.aten.scaled_dot_product_attention": "torch.ops.aten.scaled_dot_product_attention(q, q, q)",
    "torch.ops.aten._scaled_dot_product_attention_math": "torch.ops.aten._scaled_dot_product_attention_math(q, q, q)",
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu":
        "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q)",
    "torch._C._nn.scaled_dot_product_attention": "torch._C._nn.scaled_dot_product_attention(q, q, q)",
    "torch.vmap over SDPA": "torch.vmap(F.scaled_dot_product_attention)(q, q, q)",
    "nn.MultiheadAttention, slow path": "mha.train()(x, x, x)",
    "nn.MultiheadAttention, slow path without weights": "mha.train()(x, x, x, need_weights=False)",
    "nn.MultiheadAttention, fast path": "with torch.no_grad(): mha.eval()(x, x, x)",
    "torch._native_multi_head_attention": ("torch._native_multi_head_attention(x, x, x, 8, 2, mha.in_proj_weight, "
                                           "mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias)"),
    "nn.TransformerEncoderLayer, fast path": "with torch.no_grad(): layer.eval()(x)",
    "nn.TransformerEncoderLayer, slow path": "layer.train()(x)",
}
# The routes that reach an aten op: the dispatcher alone refuses them, with the Python built-ins untouched.
ATEN_ROUTES = [name for name in ROUTES if "slow path" not in name]

SCRIPT = """\
import json, torch
import torch.nn.functional as F
from autograder import rules
from autograder.containment import probes
q, x = torch.randn(2, 3, 5, 8), torch.randn(2, 5, 8)
mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
{install}
outcomes = {{}}
for name, code in json.loads({routes!r}).items():
    try:
        exec(code)
        outcomes[name] = "ran"
    except Exception as err:
        outcomes[name] = f"{{type(err).__name__}}: {{err}}"
print(json.dumps(outcomes))
"""


def outcomes(install, routes):
    """{route: "ran" or "<exception>: <message>"} in a fresh interpreter after ``install`` ran."""
    script = SCRIPT.format(install=install, routes=json.dumps(routes))
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def refused_with_a_named_builtin(outcome):
    return outcome.startswith("ForbiddenCall: ") and "is not allowed in this lab: write attention yourself" in outcome \
        and any(outcome.startswith(f"ForbiddenCall: {name} ") for name in rules.watched_builtins())


def test_every_route_to_torchs_attention_raises_in_the_child():
    """What the child installs before the student's import (probes.serve): every route fails, saying why."""
    got = outcomes("probes.install_tripwires(); probes.block_forbidden_kernels()", ROUTES)
    ran = {name: outcome for name, outcome in got.items() if not refused_with_a_named_builtin(outcome)}
    assert not ran, f"routes to torch's attention that still work (or fail without naming the built-in): {ran}"


def test_the_dispatcher_alone_refuses_every_kernel_route():
    """Without the Python tripwires (a student who restored torch's functions): the kernels still raise."""
    got = outcomes("probes.block_forbidden_kernels()", {name: ROUTES[name] for name in ATEN_ROUTES})
    ran = {name: outcome for name, outcome in got.items() if not refused_with_a_named_builtin(outcome)}
    assert not ran, f"kernel routes the dispatcher let through: {ran}"


def test_a_child_forked_after_the_block_inherits_it_and_its_own_block_is_a_no_op():
    """The zygote blocks once, before it forks (sandbox.serve); the child's own call (probes.serve) then does
    nothing, and the dispatcher it inherited refuses every kernel route."""
    forked = ("import os\nprobes.block_forbidden_kernels()\nif os.fork():\n    os._exit(os.waitstatus_to_exitcode("
              "os.wait()[1]))\nprobes.block_forbidden_kernels()")
    got = outcomes(forked, {name: ROUTES[name] for name in ATEN_ROUTES})
    ran = {name: outcome for name, outcome in got.items() if not refused_with_a_named_builtin(outcome)}
    assert not ran, f"kernel routes a forked child could take: {ran}"


def test_without_the_block_the_routes_run():
    """The control: the routes above are real ways to torch's attention in this torch."""
    got = outcomes("", {name: ROUTES[name] for name in ATEN_ROUTES})
    assert set(got.values()) == {"ran"}, got


def test_the_block_leaves_the_attention_ops_the_lab_is_built_from_working():
    script = textwrap.dedent("""\
        import torch
        from autograder.containment import probes
        probes.block_forbidden_kernels()
        q = torch.randn(2, 5, 8, requires_grad=True)
        scores = (q @ q.transpose(-2, -1) / 8 ** 0.5).masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf"))
        out = torch.einsum("bqk,bkd->bqd", torch.softmax(scores, dim=-1), q)
        out.sum().backward()
        print(tuple(out.shape), tuple(q.grad.shape))
        """)
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "(2, 5, 8) (2, 5, 8)"


def test_every_attention_kernel_of_this_torch_is_blocked():
    """A torch upgrade that adds an attention kernel under a new name fails here until it is covered."""
    import torch

    attention_like = {op for op in torch._C._dispatch_get_all_op_names() if op.startswith("aten::")
                      and ("attention" in op or "sdp" in op)}
    assert attention_like - set(probes.blocked_ops()) == set()
