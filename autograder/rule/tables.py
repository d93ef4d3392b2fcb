"""The rule's tables: what a student's two files may name, grouped as the lab text (README.md section 5,
generated from them) shows them. Each table is data; ``checker`` decides by them.
"""
import ast
import builtins
import types

FILES = ("attention.py", "mha.py")  # the pair of student files; each is checked with the other beside it

# What each forbidden name really is, for messages.
FORBIDDEN = {
    "scaled_dot_product_attention": "torch.nn.functional.scaled_dot_product_attention",
    "MultiheadAttention": "torch.nn.MultiheadAttention",
    "multi_head_attention_forward": "torch.nn.functional.multi_head_attention_forward",
    "flex_attention": "torch.nn.attention.flex_attention",
}
# torch's whole transformer layers: attention and more, built in.
TRANSFORMERS = ("Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
                "TransformerDecoderLayer")
STUDENT_MODULES = {"attention", "mha"}  # your own modules: their names are always fine

# What your files may use (README.md, section 5, is generated from these tables). The rule is an
# allow-list over a small language the checker can follow completely:
# - a module is never a value: it appears only at the head of `module.name` (torch.softmax, F.linear),
#   bound once by an import at the top of the file and never rebound;
# - every name of a module is listed below, grouped by what it is for;
# - an attribute of a value (a tensor, a layer, a list) is a member listed in VALUE_MEMBERS or a name
#   your own files define (self.w_q, def split_heads); special names (__x__) are never attributes;
# - nothing is looked up by a string built at run time, and nothing runs a string as code.
def _names(groups):
    return {group: tuple(text.split()) for group, text in groups.items()}


ALLOWED = {
    "torch": _names({
        "tensor types": "Tensor Size dtype device Generator BoolTensor FloatTensor DoubleTensor HalfTensor "
                        "LongTensor IntTensor ByteTensor ShortTensor BFloat16Tensor",
        "dtypes": "float16 float32 float64 bfloat16 half float double int8 int16 int32 int64 uint8 long int "
                  "short bool complex64 complex128 cfloat cdouble",
        "constants and version": "inf nan pi e __version__",
        "dtype facts": "finfo iinfo get_default_dtype set_default_dtype is_tensor is_floating_point is_complex "
                       "numel promote_types result_type can_cast",
        "creation": "tensor as_tensor from_numpy zeros ones full empty zeros_like ones_like full_like empty_like "
                    "arange linspace logspace eye rand randn randint rand_like randn_like randint_like randperm "
                    "manual_seed normal bernoulli multinomial tril_indices triu_indices scalar_tensor complex "
                    "polar diag diag_embed diagflat block_diag",
        "shapes": "cat concat concatenate stack hstack vstack dstack column_stack row_stack reshape flatten "
                  "unflatten squeeze unsqueeze transpose swapaxes swapdims permute movedim moveaxis t split "
                  "chunk tensor_split unbind narrow select index_select gather scatter scatter_add take "
                  "take_along_dim masked_select broadcast_to broadcast_tensors broadcast_shapes atleast_1d "
                  "atleast_2d atleast_3d flip fliplr flipud roll rot90 tile repeat_interleave tril triu "
                  "diagonal meshgrid cartesian_prod combinations nonzero argwhere clone view_as_real "
                  "view_as_complex",
        "arithmetic": "add sub subtract mul multiply div divide true_divide floor_divide remainder fmod neg "
                      "negative abs absolute reciprocal sqrt rsqrt square pow float_power exp exp2 expm1 log "
                      "log2 log10 log1p sigmoid tanh relu sin cos tan erf erfc sign sgn floor ceil round trunc "
                      "frac clamp clip clamp_min clamp_max lerp addcmul addcdiv hypot atan2 logaddexp xlogy "
                      "nan_to_num dist cdist",
        "products": "matmul mm bmm baddbmm addbmm addmm addmv mv dot vdot inner outer ger einsum tensordot kron "
                    "cross det inverse trace",
        "reductions": "sum mean prod max min amax amin aminmax argmax argmin maximum minimum fmax fmin softmax "
                      "log_softmax logsumexp cumsum cumprod cummax cummin std var std_mean var_mean median "
                      "nanmean nansum norm count_nonzero all any topk sort argsort kthvalue mode unique bincount",
        "comparison and masking": "where masked_fill eq ne lt le gt ge equal allclose isclose isinf isnan "
                                  "isfinite isneginf isposinf isreal logical_and logical_or logical_not "
                                  "logical_xor bitwise_and bitwise_or bitwise_not bitwise_xor greater less "
                                  "greater_equal less_equal not_equal",
        "gradients and precision": "no_grad enable_grad inference_mode set_grad_enabled is_grad_enabled "
                                   "is_inference_mode_enabled autocast is_autocast_enabled",
        "layers as functions": "dropout layer_norm qr",
        "modules": "nn linalg special autograd cuda backends amp testing jit",
    }),
    "torch.cuda": _names({"devices": "is_available device_count"}),
    "torch.backends": _names({"modules": "mps"}),
    "torch.backends.mps": _names({"devices": "is_available"}),
    "torch.amp": _names({"precision": "autocast"}),
    "torch.testing": _names({"checks": "assert_close"}),
    "torch.jit": _names({"checks": "is_scripting is_tracing"}),
    "torch.nn": _names({
        "layers": "Module Linear LazyLinear Bilinear Identity Dropout Embedding LayerNorm RMSNorm GroupNorm "
                  "BatchNorm1d Softmax LogSoftmax ReLU LeakyReLU GELU SiLU Tanh Sigmoid Conv1d Conv2d Flatten Unflatten",
        "containers and parameters": "Parameter ModuleList ModuleDict Sequential ParameterList ParameterDict",
        "modules": "functional init parameter",
    }),
    "torch.nn.parameter": _names({"parameters": "Parameter"}),
    "torch.nn.functional": _names({
        "layers as functions": "softmax log_softmax softmin linear bilinear dropout relu gelu silu tanh sigmoid "
                               "softplus elu leaky_relu pad normalize layer_norm rms_norm one_hot embedding "
                               "cosine_similarity conv1d interpolate unfold logsigmoid glu gumbel_softmax",
    }),
    "torch.nn.init": _names({
        "initialisation": "xavier_uniform_ xavier_normal_ kaiming_uniform_ kaiming_normal_ normal_ uniform_ "
                          "zeros_ ones_ constant_ eye_ dirac_ orthogonal_ trunc_normal_ calculate_gain "
                          "_calculate_fan_in_and_fan_out",
    }),
    "torch.linalg": _names({
        "linear algebra": "norm vector_norm matrix_norm matmul inv solve det qr svd eigh cholesky vecdot",
    }),
    "torch.special": _names({"special functions": "softmax log_softmax logsumexp expit erf logit"}),
    "torch.autograd": _names({"autograd": "grad Function Variable", "modules": "function"}),
    "torch.autograd.function": _names({"autograd": "Function"}),
    "math": _names({
        "math": "sqrt isqrt exp expm1 log log2 log10 log1p pow inf nan pi e tau floor ceil trunc prod fsum "
                "isclose isinf isnan isfinite gcd lcm fabs copysign erf tanh sin cos comb perm factorial dist "
                "hypot modf frexp ldexp",
    }),
    "numpy": _names({
        "arrays": "array asarray ndarray ones zeros ones_like zeros_like full full_like eye arange triu tril "
                  "reshape transpose concatenate stack expand_dims squeeze swapaxes moveaxis split",
        "math": "sqrt power float_power square exp log log2 abs sum mean prod max min maximum minimum where "
                "matmul dot einsum clip ceil floor round isinf isnan isfinite allclose inf nan pi e newaxis",
        "dtypes": "float16 float32 float64 int32 int64 uint8 bool_ finfo iinfo",
    }),
    "einops": _names({"einops": "rearrange reduce repeat einsum pack unpack parse_shape", "modules": "layers"}),
    "einops.layers": _names({"modules": "torch"}),
    "einops.layers.torch": _names({"einops layers": "Rearrange Reduce EinMix"}),
    "typing": _names({
        "typing": "Any Callable ClassVar Dict Final FrozenSet Generic Iterable Iterator List Literal Mapping "
                  "NamedTuple Optional Protocol Sequence Set Tuple Type TypeVar Union TYPE_CHECKING Annotated "
                  "TypeAlias cast overload",
    }),
    "__future__": _names({"future": "annotations"}),
    "dataclasses": _names({"dataclasses": "dataclass field asdict replace"}),
    "copy": _names({"copies": "copy deepcopy"}),
    "functools": _names({"functions": "partial lru_cache cache cached_property wraps reduce"}),
    "itertools": _names({"iteration": "product combinations permutations chain repeat count accumulate "
                                      "zip_longest islice starmap pairwise"}),
    "collections": _names({"containers": "namedtuple OrderedDict defaultdict deque Counter"}),
    "warnings": _names({"warnings": "warn"}),
    "sys": _names({"printing and limits": "stdout stderr exit float_info maxsize"}),
    "time": _names({"timing": "time perf_counter monotonic"}),
    "os": _names({"debug flags": "environ getenv"}),
    "logging": _names({"messages": "getLogger"}),
}
# Names that may only stand in type annotations (never called): their module is installed too.
ANNOTATION_ONLY = {
    "torch.jit": ("Final",),
    "jaxtyping": tuple("Float Float16 Float32 Float64 Int Int32 Int64 Bool Shaped Num Integer Real Inexact "
                       "UInt8".split()),
}
# Members of the values attention code handles, by type. An attribute of a value is one of these or a
# name your own files define.
VALUE_MEMBERS = _names({
    "tensor: shape and type": "shape size dim ndim ndimension numel nelement dtype device is_cuda is_floating_point "
                              "is_complex is_contiguous requires_grad grad grad_fn is_leaf data T mT H mH layout "
                              "element_size itemsize nbytes storage_offset stride get_device",
    "tensor: conversion": "to type type_as float double half bfloat16 bool int long short byte char cpu cuda "
                          "detach detach_ clone contiguous item tolist numpy new_tensor new_zeros new_ones "
                          "new_full new_empty requires_grad_ retain_grad backward register_hook",
    "tensor: shapes": "view view_as reshape reshape_as flatten unflatten squeeze squeeze_ unsqueeze unsqueeze_ "
                      "transpose transpose_ t t_ permute movedim moveaxis swapaxes swapdims expand expand_as "
                      "repeat repeat_interleave split chunk tensor_split unbind narrow select index_select gather "
                      "scatter scatter_ scatter_add scatter_add_ masked_select flip roll tril tril_ triu triu_ fill_diagonal_ "
                      "diagonal diag unfold index_fill index_fill_ index_copy index_copy_ index_add index_add_ "
                      "index_put index_put_ take take_along_dim nonzero tile",
    "tensor: arithmetic": "add add_ sub sub_ mul mul_ div div_ true_divide floor_divide remainder fmod neg neg_ "
                          "abs abs_ reciprocal sqrt sqrt_ rsqrt square pow pow_ exp exp_ expm1 log log_ log2 "
                          "log10 log1p sigmoid sigmoid_ tanh tanh_ relu relu_ sin cos erf sign floor ceil round "
                          "trunc clamp clamp_ clip clip_ clamp_min clamp_max lerp addcmul addcdiv nan_to_num "
                          "nan_to_num_ matmul mm bmm baddbmm addmm mv dot outer softmax log_softmax exp2 logaddexp "
                          "logsumexp fill_ zero_ copy_ normal_ uniform_ masked_fill masked_fill_ masked_scatter "
                          "where",
    "tensor: reductions": "sum mean prod max min amax amin aminmax argmax argmin maximum minimum cumsum cumprod "
                          "std var median norm count_nonzero all any topk sort argsort unique values indices",
    "tensor: comparison": "eq eq_ ne ne_ lt lt_ le le_ gt gt_ ge ge_ equal allclose isclose isinf isnan isneginf "
                          "isposinf isfinite "
                          "logical_and logical_and_ logical_or logical_or_ logical_not logical_not_ logical_xor "
                          "bitwise_not bitwise_and bitwise_or",
    "layers (nn.Module)": "forward parameters named_parameters buffers named_buffers children named_children modules "
                          "named_modules train eval training zero_grad register_buffer register_parameter "
                          "register_module add_module apply state_dict load_state_dict weight bias in_features "
                          "out_features reset_parameters extra_repr get_submodule get_parameter p inplace "
                          "normalized_shape eps elementwise_affine embedding_dim num_embeddings padding_idx "
                          "append extend insert register_forward_hook register_forward_pre_hook",
    # torch's attention layer is forbidden (its use is the finding); reading its weights hides nothing more.
    "attention layers' weights": "in_proj_weight in_proj_bias out_proj num_heads embed_dim head_dim batch_first "
                                 "kdim vdim",
    "dtypes, devices and limits": "is_signed to_real to_complex index min max tiny smallest_normal resolution "
                                  "bits epsilon",
    "autograd functions": "save_for_backward saved_tensors needs_input_grad mark_dirty mark_non_differentiable "
                          "set_materialize_grads",
    "python values": "append extend insert pop remove clear copy count index sort reverse items keys values get "
                     "update setdefault popitem fromkeys add discard union intersection difference issubset "
                     "issuperset join split rsplit strip lstrip rstrip startswith endswith replace lower upper "
                     "title capitalize center ljust rjust zfill find isdigit isidentifier splitlines format "
                     "is_integer bit_length real imag conjugate appendleft popleft maxlen rotate most_common "
                     "args write flush setter getter deleter manual_seed initial_seed debug info warning",
    "numpy arrays": "astype",
})

MODULES = {module: frozenset(name for names in groups.values() for name in names)
           for module, groups in ALLOWED.items()}
MEMBERS = frozenset(name for names in VALUE_MEMBERS.values() for name in names)
ALLOWED_IMPORTS = ", ".join(sorted(m for m in MODULES if m != "__future__")) + " and your own attention"
# Python's built-ins correct code uses: any other one, unless the file defines that name itself, is refused.
ALLOWED_BUILTINS = frozenset((
    "abs all any ascii bin bool bytearray bytes callable chr classmethod complex dict divmod enumerate filter float format "
    "frozenset hash hex int isinstance issubclass iter len list map max min next object oct ord pow print "
    "property range repr reversed round set slice sorted staticmethod str sum super tuple type zip None True "
    "False NotImplemented Ellipsis __name__ __doc__ __file__").split()) | {
    name for name in dir(builtins) if name.endswith(("Error", "Exception", "Warning"))} | {
    "StopIteration", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
# Built-ins that run strings as code, hand out namespaces, or reach objects by a computed name: never
# allowed, and reserved (no parameter or function of yours may take their names).
REFUSED_NAMES = frozenset("eval exec compile __import__ globals locals vars breakpoint open help "
                          "__builtins__ __build_class__ __loader__ __spec__".split())
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
# The interpreter's own objects (frames, code, generators, tracebacks, cells) have members that reach
# every module: your own attributes may not take those names, so an attribute name that is yours can
# never mean one of them. (send, throw, close, clear, replace are ordinary methods there: they reach nothing.)
_INTERPRETER_TYPES = (types.FrameType, types.CodeType, types.GeneratorType, types.CoroutineType,
                      types.AsyncGeneratorType, types.TracebackType, types.CellType)
INTERPRETER_MEMBERS = frozenset(
    name for kind in _INTERPRETER_TYPES for name in dir(kind) if not name.startswith("__")
) - {"send", "throw", "close", "clear", "replace", "aclose", "asend", "athrow"}
# The special methods a class of yours may define (def, or an assignment in the class body), each with what
# it is for. Any other special name is a hook that a library or the interpreter calls by itself, often from
# C, with powers the checker never sees: numpy reads __array_interface__ (a view of any address), torch calls
# __torch_function__ and __torch_dispatch__ with its own functions, __index__ and __float__ feed sizes to C,
# __getattr__ and __getattribute__ answer for names the checker never read, __get__/__set__/__set_name__
# make descriptors, __init_subclass__, __class_getitem__ and metaclasses run at class creation, __del__ runs
# whenever the collector likes, __slots__ makes descriptors. Each name here only answers your own code:
SPECIAL_METHODS = {
    "__init__": "builds your object (and super().__init__() builds its base)",
    "__post_init__": "finishes a dataclass's generated __init__",
    "__repr__": "your object as text, for print() and error messages",
    "__str__": "your object as text, for print() and str()",
    "__call__": "calls your object like a function",
    "__len__": "len(obj) of your container",
    "__getitem__": "obj[i] of your container",
    "__iter__": "for x in obj over your container",
}
# What a class of yours may derive from, besides your own classes, object and Python's exceptions: torch's
# layers and containers, autograd's Function, and typing's plain bases. On an object of yours (self), private
# names reach what these bases define: the reach walk follows them all (autograder/platforms/rule_reach.py).
# Not a tensor, an array or a builtin container: their private attributes hold raw storage and C slots.
BASES = frozenset([f"torch.nn.{name}" for name in ALLOWED["torch.nn"]["layers"] + ALLOWED["torch.nn"][
    "containers and parameters"] if name != "Parameter"] + [f"einops.layers.torch.{name}" for name in ALLOWED[
        "einops.layers.torch"]["einops layers"]] + ["torch.autograd.Function", "torch.autograd.function.Function",
                                                   "typing.NamedTuple", "typing.Protocol", "typing.Generic",
                                                   "collections.namedtuple"])
# The special names a module of yours may bind: `__all__` (what `from attention import *` takes).
MODULE_SPECIALS = frozenset({"__all__"})
# Python statements and expressions the checker follows; any other kind (match, async, await) is refused.
REFUSED_SYNTAX = {"Match": "a match statement", "AsyncFunctionDef": "async def", "Await": "await",
                  "AsyncFor": "async for", "AsyncWith": "async with"}
# What the checker reads: larger or deeper code is the student's to simplify, never the grader's error.
MAX_DEPTH = 100  # nested expressions and blocks; correct attention code stays under 30
MAX_NODES = 200_000
ANNOTATION_SYNTAX = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.Load,
                     ast.BinOp, ast.BitOr, ast.Slice)
