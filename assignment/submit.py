# Generated from autograder/rule/ (library_names.py, tables.py, source.py, checker.py, submit_cli.py): do not edit.
# This is the rule the grader applies, as one script; a change to it is made there.
"""Check attention.py and mha.py, then pack them into submission.zip for Gradescope.

    python submit.py          # the files next to this script
    python submit.py DIR      # the files in DIR

Both files must exist, parse, import, stay away from the functions this lab forbids, and
use only what the lab allows (README.md, section 5): the modules and names in MODULES, torch's
public API, the built-ins that compute, getattr with a written name only. The zip is written to the current folder and
holds exactly the two files.

The public tests reuse :func:`file_findings` by importing this file, so it uses the standard
library only and does nothing at import time. The grader applies the same rule: this file is
generated from it.
"""
import argparse
import ast
import builtins
import difflib
import io
import os
import string
import subprocess
import sys
import tempfile
import tokenize
import types
import zipfile
from pathlib import Path
from typing import NamedTuple


# ============================================================================= autograder/rule/library_names.py

FINGERPRINT = 'd637a809b3f710b4'
LIBRARY_NAMES = {
    'T_destination': 'type.T_destination',
    '_MutableMapping__marker': '_Environ._MutableMapping__marker',
    '_abc_impl': '_Environ._abc_impl',
    '_acquire_restore': 'RLock._acquire_restore',
    '_addmm_activation': 'tensortype._addmm_activation',
    '_apply': 'type._apply',
    '_apply_recipe': 'type._apply_recipe',
    '_asdict': 'Pair._asdict',
    '_at_fork_reinit': 'RLock._at_fork_reinit',
    '_autocast_to_full_precision': 'tensortype._autocast_to_full_precision',
    '_autocast_to_reduced_precision': 'tensortype._autocast_to_reduced_precision',
    '_backward_cls': 'FunctionMeta._backward_cls',
    '_backward_hooks': 'Linear._backward_hooks',
    '_backward_pre_hooks': 'Linear._backward_pre_hooks',
    '_buffers': 'Linear._buffers',
    '_cache': 'Logger._cache',
    '_call_impl': 'type._call_impl',
    '_checkClosed': 'TextIOWrapper._checkClosed',
    '_checkReadable': 'TextIOWrapper._checkReadable',
    '_checkSeekable': 'TextIOWrapper._checkSeekable',
    '_checkWritable': 'TextIOWrapper._checkWritable',
    '_check_input_dim': 'type._check_input_dim',
    '_class_getitem_inner': 'type._class_getitem_inner',
    '_clear_cache': 'Manager._clear_cache',
    '_clear_non_serializable_cached_data': 'tensortype._clear_non_serializable_cached_data',
    '_cmp_wrapper': 'TorchVersion._cmp_wrapper',
    '_coalesced_': 'tensortype._coalesced_',
    '_compiled_autograd_key': 'FunctionMeta._compiled_autograd_key',
    '_conj': 'tensortype._conj',
    '_conj_physical': 'tensortype._conj_physical',
    '_conv_forward': 'type._conv_forward',
    '_convert_to_version': 'TorchVersion._convert_to_version',
    '_create_parameters': 'type._create_parameters',
    '_create_rearrange_layers': 'type._create_rearrange_layers',
    '_data': '_Environ._data',
    '_dealloc_warn': 'FileIO._dealloc_warn',
    '_dimI': 'tensortype._dimI',
    '_dimV': 'tensortype._dimV',
    '_dtensor__new__': 'tensortype._dtensor__new__',
    '_execution_engine': 'VariableMeta._execution_engine',
    '_field_defaults': 'Pair._field_defaults',
    '_fill_padding_idx_with_zero': 'type._fill_padding_idx_with_zero',
    '_finfo_cache': 'type._finfo_cache',
    '_fix_weakref': 'tensortype._fix_weakref',
    '_fixupChildren': 'Manager._fixupChildren',
    '_fixupParents': 'Manager._fixupParents',
    '_forward_cls': 'ScaleBackward._forward_cls',
    '_forward_hooks': 'Linear._forward_hooks',
    '_forward_hooks_always_called': 'Linear._forward_hooks_always_called',
    '_forward_hooks_with_kwargs': 'Linear._forward_hooks_with_kwargs',
    '_forward_pre_hooks': 'Linear._forward_pre_hooks',
    '_forward_pre_hooks_with_kwargs': 'Linear._forward_pre_hooks_with_kwargs',
    '_from_iterable': 'ItemsView._from_iterable',
    '_get_abs_string_index': 'type._get_abs_string_index',
    '_get_backward_hooks': 'type._get_backward_hooks',
    '_get_backward_pre_hooks': 'type._get_backward_pre_hooks',
    '_get_compiled_autograd_symints': 'FunctionMeta._get_compiled_autograd_symints',
    '_get_item_by_idx': 'type._get_item_by_idx',
    '_get_name': 'type._get_name',
    '_get_strided_loop': 'ufunc._get_strided_loop',
    '_get_user_fn': 'ScaleBackward._get_user_fn',
    '_getitem': '_SpecialForm._getitem',
    '_grad_fn': 'Tensor._grad_fn',
    '_hash': 'ItemsView._hash',
    '_implementation': '_ArrayFunctionDispatcher._implementation',
    '_indices': 'tensortype._indices',
    '_infer_parameters': 'type._infer_parameters',
    '_init': 'type._init',
    '_initialize_hook': 'LazyLinear._initialize_hook',
    '_input_metadata': 'ScaleBackward._input_metadata',
    '_is_all_true': 'tensortype._is_all_true',
    '_is_any_true': 'tensortype._is_any_true',
    '_is_owned': 'RLock._is_owned',
    '_is_view': 'tensortype._is_view',
    '_is_zerotensor': 'tensortype._is_zerotensor',
    '_keep_positive': 'type._keep_positive',
    '_key_to_attr': 'type._key_to_attr',
    '_keys': 'ParameterDict._keys',
    '_lazy_clone': 'tensortype._lazy_clone',
    '_lazy_load_hook': 'type._lazy_load_hook',
    '_load_from_state_dict': 'type._load_from_state_dict',
    '_load_hook': 'LazyLinear._load_hook',
    '_load_state_dict_post_hooks': 'Linear._load_state_dict_post_hooks',
    '_load_state_dict_pre_hooks': 'Linear._load_state_dict_pre_hooks',
    '_log': 'Logger._log',
    '_make': 'Pair._make',
    '_make_subclass': 'tensortype._make_subclass',
    '_make_wrapper_subclass': 'tensortype._make_wrapper_subclass',
    '_mapping': 'ItemsView._mapping',
    '_max_vals': 'type._max_vals',
    '_maybe_warn_non_full_backward_hook': 'type._maybe_warn_non_full_backward_hook',
    '_metadata': 'OrderedDict._metadata',
    '_min_vals': 'type._min_vals',
    '_modules': 'Linear._modules',
    '_named_members': 'type._named_members',
    '_neg_view': 'tensortype._neg_view',
    '_nested_tensor_size': 'tensortype._nested_tensor_size',
    '_nested_tensor_storage_offsets': 'tensortype._nested_tensor_storage_offsets',
    '_nested_tensor_strides': 'tensortype._nested_tensor_strides',
    '_nnz': 'tensortype._nnz',
    '_non_persistent_buffers_set': 'Linear._non_persistent_buffers_set',
    '_parameters': 'Linear._parameters',
    '_philox_normal_': 'tensortype._philox_normal_',
    '_philox_uniform_': 'tensortype._philox_uniform_',
    '_pybind11_conduit_v1_': 'SavedTensor._pybind11_conduit_v1_',
    '_raw_saved_result': 'ExpBackward0._raw_saved_result',
    '_recursion_count': 'RLock._recursion_count',
    '_reduce_ex_internal': 'tensortype._reduce_ex_internal',
    '_register_hook': 'FunctionMeta._register_hook',
    '_register_hook_dict': 'FunctionMeta._register_hook_dict',
    '_register_load_state_dict_pre_hook': 'type._register_load_state_dict_pre_hook',
    '_register_state_dict_hook': 'type._register_state_dict_hook',
    '_release_save': 'RLock._release_save',
    '_replace': 'Pair._replace',
    '_replicate_for_data_parallel': 'type._replicate_for_data_parallel',
    '_require_tuple_int': 'type._require_tuple_int',
    '_resolve_dtypes_and_context': 'ufunc._resolve_dtypes_and_context',
    '_rev_view_func_unsafe': 'tensortype._rev_view_func_unsafe',
    '_save_to_state_dict': 'type._save_to_state_dict',
    '_sequence_nr': 'FunctionMeta._sequence_nr',
    '_set_sequence_nr': 'FunctionMeta._set_sequence_nr',
    '_slow_forward': 'type._slow_forward',
    '_sparse_mask_projection': 'tensortype._sparse_mask_projection',
    '_state_dict_hooks': 'Linear._state_dict_hooks',
    '_state_dict_pre_hooks': 'Linear._state_dict_pre_hooks',
    '_to_dense': 'tensortype._to_dense',
    '_to_sparse': 'tensortype._to_sparse',
    '_to_sparse_bsc': 'tensortype._to_sparse_bsc',
    '_to_sparse_bsr': 'tensortype._to_sparse_bsr',
    '_to_sparse_csc': 'tensortype._to_sparse_csc',
    '_to_sparse_csr': 'tensortype._to_sparse_csr',
    '_typed_storage': 'tensortype._typed_storage',
    '_use_count': 'tensortype._use_count',
    '_values': 'tensortype._values',
    '_view_func': 'tensortype._view_func',
    '_view_func_unsafe': 'tensortype._view_func_unsafe',
    '_wrapped_call_impl': 'type._wrapped_call_impl',
    'absolute': 'tensortype.absolute',
    'absolute_': 'tensortype.absolute_',
    'accumulate': 'ufunc.accumulate',
    'acos': 'tensortype.acos',
    'acos_': 'tensortype.acos_',
    'acosh': 'tensortype.acosh',
    'acosh_': 'tensortype.acosh_',
    'acquire': 'RLock.acquire',
    'addFilter': 'Logger.addFilter',
    'addHandler': 'Logger.addHandler',
    'add_note': 'OwnError.add_note',
    'addbmm': 'tensortype.addbmm',
    'addbmm_': 'tensortype.addbmm_',
    'addcdiv_': 'tensortype.addcdiv_',
    'addcmul_': 'tensortype.addcmul_',
    'addmm_': 'tensortype.addmm_',
    'addmv': 'tensortype.addmv',
    'addmv_': 'tensortype.addmv_',
    'addr': 'tensortype.addr',
    'addr_': 'tensortype.addr_',
    'adjoint': 'tensortype.adjoint',
    'angle': 'tensortype.angle',
    'apply_': 'tensortype.apply_',
    'apply_boxed': 'ScaleBackward.apply_boxed',
    'apply_jvp': 'ScaleBackward.apply_jvp',
    'approximate': 'GELU.approximate',
    'arccos': 'tensortype.arccos',
    'arccos_': 'tensortype.arccos_',
    'arccosh': 'tensortype.arccosh',
    'arccosh_': 'tensortype.arccosh_',
    'arcsin': 'tensortype.arcsin',
    'arcsin_': 'tensortype.arcsin_',
    'arcsinh': 'tensortype.arcsinh',
    'arcsinh_': 'tensortype.arcsinh_',
    'arctan': 'tensortype.arctan',
    'arctan2': 'tensortype.arctan2',
    'arctan2_': 'tensortype.arctan2_',
    'arctan_': 'tensortype.arctan_',
    'arctanh': 'tensortype.arctanh',
    'arctanh_': 'tensortype.arctanh_',
    'argpartition': 'type.argpartition',
    'argwhere': 'tensortype.argwhere',
    'as_integer_ratio': 'float.as_integer_ratio',
    'as_strided': 'tensortype.as_strided',
    'as_strided_': 'tensortype.as_strided_',
    'as_strided_scatter': 'tensortype.as_strided_scatter',
    'as_subclass': 'tensortype.as_subclass',
    'asin': 'tensortype.asin',
    'asin_': 'tensortype.asin_',
    'asinh': 'tensortype.asinh',
    'asinh_': 'tensortype.asinh_',
    'at': 'ufunc.at',
    'atan': 'tensortype.atan',
    'atan2': 'tensortype.atan2',
    'atan2_': 'tensortype.atan2_',
    'atan_': 'tensortype.atan_',
    'atanh': 'tensortype.atanh',
    'atanh_': 'tensortype.atanh_',
    'baddbmm_': 'tensortype.baddbmm_',
    'bernoulli': 'tensortype.bernoulli',
    'bernoulli_': 'tensortype.bernoulli_',
    'bincount': 'tensortype.bincount',
    'bit_count': 'type.bit_count',
    'bitwise_and_': 'tensortype.bitwise_and_',
    'bitwise_left_shift': 'tensortype.bitwise_left_shift',
    'bitwise_left_shift_': 'tensortype.bitwise_left_shift_',
    'bitwise_not_': 'tensortype.bitwise_not_',
    'bitwise_or_': 'tensortype.bitwise_or_',
    'bitwise_right_shift': 'tensortype.bitwise_right_shift',
    'bitwise_right_shift_': 'tensortype.bitwise_right_shift_',
    'bitwise_xor': 'tensortype.bitwise_xor',
    'bitwise_xor_': 'tensortype.bitwise_xor_',
    'broadcast_to': 'tensortype.broadcast_to',
    'buffer': 'TextIOWrapper.buffer',
    'byteswap': 'type.byteswap',
    'cache_clear': '_lru_cache_wrapper.cache_clear',
    'cache_info': '_lru_cache_wrapper.cache_info',
    'cache_parameters': '_lru_cache_wrapper.cache_parameters',
    'callHandlers': 'Logger.callHandlers',
    'casefold': 'TorchVersion.casefold',
    'cast': 'memoryview.cast',
    'cauchy_': 'tensortype.cauchy_',
    'ccol_indices': 'tensortype.ccol_indices',
    'cdouble': 'tensortype.cdouble',
    'ceil_': 'tensortype.ceil_',
    'cfloat': 'tensortype.cfloat',
    'chalf': 'tensortype.chalf',
    'cholesky': 'tensortype.cholesky',
    'cholesky_inverse': 'tensortype.cholesky_inverse',
    'cholesky_solve': 'tensortype.cholesky_solve',
    'choose': 'type.choose',
    'clamp_max_': 'tensortype.clamp_max_',
    'clamp_min_': 'tensortype.clamp_min_',
    'clone_state': 'OpaqueBaseMeta.clone_state',
    'close': 'TextIOWrapper.close',
    'cls_to_become': 'type.cls_to_become',
    'coalesce': 'tensortype.coalesce',
    'col_indices': 'tensortype.col_indices',
    'compile': 'type.compile',
    'compress': 'type.compress',
    'conj': 'type.conj',
    'conj_physical': 'tensortype.conj_physical',
    'conj_physical_': 'tensortype.conj_physical_',
    'const_data_ptr': 'tensortype.const_data_ptr',
    'copy_with': '_CallableType.copy_with',
    'copysign': 'tensortype.copysign',
    'copysign_': 'tensortype.copysign_',
    'corrcoef': 'tensortype.corrcoef',
    'cos_': 'tensortype.cos_',
    'cosh': 'tensortype.cosh',
    'cosh_': 'tensortype.cosh_',
    'cov': 'tensortype.cov',
    'critical': 'Logger.critical',
    'cross': 'tensortype.cross',
    'crow_indices': 'tensortype.crow_indices',
    'ctypes': 'ndarray.ctypes',
    'cummax': 'tensortype.cummax',
    'cummin': 'tensortype.cummin',
    'cumprod_': 'tensortype.cumprod_',
    'cumsum_': 'tensortype.cumsum_',
    'data_ptr': 'tensortype.data_ptr',
    'decode': 'bytes.decode',
    'decodekey': '_Environ.decodekey',
    'decodevalue': '_Environ.decodevalue',
    'default_factory': 'defaultdict.default_factory',
    'deg2rad': 'tensortype.deg2rad',
    'deg2rad_': 'tensortype.deg2rad_',
    'dense_dim': 'tensortype.dense_dim',
    'dequantize': 'tensortype.dequantize',
    'descr': 'Float32DType.descr',
    'det': 'tensortype.det',
    'diag_embed': 'tensortype.diag_embed',
    'diagflat': 'tensortype.diagflat',
    'diagonal_scatter': 'tensortype.diagonal_scatter',
    'diff': 'tensortype.diff',
    'difference_update': '_SpecialGenericAlias.difference_update',
    'digamma': 'tensortype.digamma',
    'digamma_': 'tensortype.digamma_',
    'dim_order': 'tensortype.dim_order',
    'dist': 'tensortype.dist',
    'divide': 'tensortype.divide',
    'divide_': 'tensortype.divide_',
    'dsplit': 'tensortype.dsplit',
    'dump': 'type.dump',
    'dumps': 'type.dumps',
    'eig': 'tensortype.eig',
    'elements': 'type.elements',
    'encode': 'TorchVersion.encode',
    'encodekey': '_Environ.encodekey',
    'encodevalue': '_Environ.encodevalue',
    'epsneg': 'type.epsneg',
    'erf_': 'tensortype.erf_',
    'erfc': 'tensortype.erfc',
    'erfc_': 'tensortype.erfc_',
    'erfinv': 'tensortype.erfinv',
    'erfinv_': 'tensortype.erfinv_',
    'error': 'Logger.error',
    'exception': 'Logger.exception',
    'exp2_': 'tensortype.exp2_',
    'expandtabs': 'TorchVersion.expandtabs',
    'expm1_': 'tensortype.expm1_',
    'exponential_': 'tensortype.exponential_',
    'extendleft': 'type.extendleft',
    'extra_dict_ref': 'RemovableHandle.extra_dict_ref',
    'fatal': 'Logger.fatal',
    'fget': 'property.fget',
    'fileno': 'TextIOWrapper.fileno',
    'fill': 'type.fill',
    'filter': 'Logger.filter',
    'filters': 'Logger.filters',
    'findCaller': 'Logger.findCaller',
    'fix': 'tensortype.fix',
    'fix_': 'tensortype.fix_',
    'flags': 'ndarray.flags',
    'flat': 'ndarray.flat',
    'fliplr': 'tensortype.fliplr',
    'flipud': 'tensortype.flipud',
    'float_power': 'tensortype.float_power',
    'float_power_': 'tensortype.float_power_',
    'floor_': 'tensortype.floor_',
    'floor_divide_': 'tensortype.floor_divide_',
    'fmax': 'tensortype.fmax',
    'fmin': 'tensortype.fmin',
    'fmod_': 'tensortype.fmod_',
    'format_map': 'TorchVersion.format_map',
    'frac': 'tensortype.frac',
    'frac_': 'tensortype.frac_',
    'frexp': 'tensortype.frexp',
    'from_bytes': 'int.from_bytes',
    'from_iterable': 'type.from_iterable',
    'from_pretrained': 'type.from_pretrained',
    'fromhex': 'float.fromhex',
    'func': 'cached_property.func',
    'gcd': 'tensortype.gcd',
    'gcd_': 'tensortype.gcd_',
    'geometric_': 'tensortype.geometric_',
    'geqrf': 'tensortype.geqrf',
    'ger': 'tensortype.ger',
    'getChild': 'Logger.getChild',
    'getEffectiveLevel': 'Logger.getEffectiveLevel',
    'getLogger': 'Manager.getLogger',
    'getMandatoryRelease': '_Feature.getMandatoryRelease',
    'getOptionalRelease': '_Feature.getOptionalRelease',
    'get_buffer': 'type.get_buffer',
    'get_extra_state': 'type.get_extra_state',
    'get_offset': 'OpaqueBaseMeta.get_offset',
    'get_state': 'OpaqueBaseMeta.get_state',
    'getfield': 'type.getfield',
    'gi_code': 'generator.gi_code',
    'gi_frame': 'generator.gi_frame',
    'gi_yieldfrom': 'generator.gi_yieldfrom',
    'graphsafe_get_state': 'OpaqueBaseMeta.graphsafe_get_state',
    'graphsafe_set_state': 'OpaqueBaseMeta.graphsafe_set_state',
    'greater': 'tensortype.greater',
    'greater_': 'tensortype.greater_',
    'greater_equal': 'tensortype.greater_equal',
    'greater_equal_': 'tensortype.greater_equal_',
    'handle': 'Logger.handle',
    'handlers': 'Logger.handlers',
    'hardshrink': 'tensortype.hardshrink',
    'hasHandlers': 'Logger.hasHandlers',
    'has_uninitialized_params': 'type.has_uninitialized_params',
    'hash_tensor': 'tensortype.hash_tensor',
    'heaviside': 'tensortype.heaviside',
    'heaviside_': 'tensortype.heaviside_',
    'hex': 'float.hex',
    'histc': 'tensortype.histc',
    'histogram': 'tensortype.histogram',
    'hooks_dict_ref': 'RemovableHandle.hooks_dict_ref',
    'hsplit': 'tensortype.hsplit',
    'hypot': 'tensortype.hypot',
    'hypot_': 'tensortype.hypot_',
    'i0': 'tensortype.i0',
    'i0_': 'tensortype.i0_',
    'iexp': 'type.iexp',
    'igamma': 'tensortype.igamma',
    'igamma_': 'tensortype.igamma_',
    'igammac': 'tensortype.igammac',
    'igammac_': 'tensortype.igammac_',
    'index_reduce': 'tensortype.index_reduce',
    'index_reduce_': 'tensortype.index_reduce_',
    'initialize_einmix': 'type.initialize_einmix',
    'initialize_parameters': 'type.initialize_parameters',
    'inner': 'tensortype.inner',
    'int_repr': 'tensortype.int_repr',
    'intersection_update': '_SpecialGenericAlias.intersection_update',
    'inverse': 'tensortype.inverse',
    'ipu': 'type.ipu',
    'isEnabledFor': 'Logger.isEnabledFor',
    'is_checkpoint_valid': '_EngineBase.is_checkpoint_valid',
    'is_coalesced': 'tensortype.is_coalesced',
    'is_conj': 'tensortype.is_conj',
    'is_distributed': 'tensortype.is_distributed',
    'is_inference': 'tensortype.is_inference',
    'is_neg': 'tensortype.is_neg',
    'is_nonzero': 'tensortype.is_nonzero',
    'is_pinned': 'tensortype.is_pinned',
    'is_same_size': 'tensortype.is_same_size',
    'is_set_to': 'tensortype.is_set_to',
    'is_shared': 'tensortype.is_shared',
    'isalnum': 'TorchVersion.isalnum',
    'isalpha': 'TorchVersion.isalpha',
    'isascii': 'TorchVersion.isascii',
    'isatty': 'TextIOWrapper.isatty',
    'isdecimal': 'TorchVersion.isdecimal',
    'isdisjoint': '_SpecialGenericAlias.isdisjoint',
    'islower': 'TorchVersion.islower',
    'isnumeric': 'TorchVersion.isnumeric',
    'isprintable': 'TorchVersion.isprintable',
    'isreal': 'tensortype.isreal',
    'isspace': 'TorchVersion.isspace',
    'istft': 'tensortype.istft',
    'istitle': 'TorchVersion.istitle',
    'isupper': 'TorchVersion.isupper',
    'jvp': 'FunctionMeta.jvp',
    'keywords': 'partial.keywords',
    'kron': 'tensortype.kron',
    'kthvalue': 'tensortype.kthvalue',
    'lcm': 'tensortype.lcm',
    'lcm_': 'tensortype.lcm_',
    'ldexp': 'tensortype.ldexp',
    'ldexp_': 'tensortype.ldexp_',
    'lerp_': 'tensortype.lerp_',
    'less': 'tensortype.less',
    'less_': 'tensortype.less_',
    'less_equal': 'tensortype.less_equal',
    'less_equal_': 'tensortype.less_equal_',
    'lgamma': 'tensortype.lgamma',
    'lgamma_': 'tensortype.lgamma_',
    'lock': 'cached_property.lock',
    'log10_': 'tensortype.log10_',
    'log1p_': 'tensortype.log1p_',
    'log2_': 'tensortype.log2_',
    'log_normal_': 'tensortype.log_normal_',
    'logaddexp2': 'tensortype.logaddexp2',
    'logcumsumexp': 'tensortype.logcumsumexp',
    'logdet': 'tensortype.logdet',
    'loggerDict': 'Manager.loggerDict',
    'logical_xor_': 'tensortype.logical_xor_',
    'logit': 'tensortype.logit',
    'logit_': 'tensortype.logit_',
    'lstsq': 'tensortype.lstsq',
    'lu': 'tensortype.lu',
    'lu_solve': 'tensortype.lu_solve',
    'machep': 'type.machep',
    'makeRecord': 'Logger.makeRecord',
    'maketrans': 'TorchVersion.maketrans',
    'manager': 'Logger.manager',
    'map2_': 'tensortype.map2_',
    'map_': 'tensortype.map_',
    'mapping': 'dict_items.mapping',
    'mark_shared_storage': 'FunctionMeta.mark_shared_storage',
    'masked_scatter_': 'tensortype.masked_scatter_',
    'matrix_exp': 'tensortype.matrix_exp',
    'matrix_power': 'tensortype.matrix_power',
    'maybe_clear_saved_tensors': 'FunctionMeta.maybe_clear_saved_tensors',
    'metadata': 'ScaleBackward.metadata',
    'mode': 'tensortype.mode',
    'module_load': 'tensortype.module_load',
    'move_to_end': 'type.move_to_end',
    'mro': '_SpecialGenericAlias.mro',
    'msort': 'tensortype.msort',
    'mtia': 'type.mtia',
    'multinomial': 'tensortype.multinomial',
    'multiply': 'tensortype.multiply',
    'multiply_': 'tensortype.multiply_',
    'multirecipe': 'type.multirecipe',
    'mvlgamma': 'tensortype.mvlgamma',
    'mvlgamma_': 'tensortype.mvlgamma_',
    'name': 'FunctionMeta.name',
    'nanmean': 'tensortype.nanmean',
    'nanmedian': 'tensortype.nanmedian',
    'nanquantile': 'tensortype.nanquantile',
    'nansum': 'tensortype.nansum',
    'narrow_copy': 'tensortype.narrow_copy',
    'negative': 'tensortype.negative',
    'negative_': 'tensortype.negative_',
    'negative_slope': 'LeakyReLU.negative_slope',
    'negep': 'type.negep',
    'new': 'tensortype.new',
    'new_empty_strided': 'tensortype.new_empty_strided',
    'newbyteorder': 'Float32DType.newbyteorder',
    'nexp': 'type.nexp',
    'next_functions': 'ScaleBackward.next_functions',
    'nextafter': 'tensortype.nextafter',
    'nextafter_': 'tensortype.nextafter_',
    'nonzero_static': 'tensortype.nonzero_static',
    'not_equal': 'tensortype.not_equal',
    'not_equal_': 'tensortype.not_equal_',
    'num_features': 'BatchNorm1d.num_features',
    'orgqr': 'tensortype.orgqr',
    'ormqr': 'tensortype.ormqr',
    'parent': 'Logger.parent',
    'partition': 'type.partition',
    'pin_memory': 'tensortype.pin_memory',
    'pinverse': 'tensortype.pinverse',
    'polygamma': 'tensortype.polygamma',
    'polygamma_': 'tensortype.polygamma_',
    'positive': 'tensortype.positive',
    'prelu': 'tensortype.prelu',
    'proj': 'Own.proj',
    'put': 'type.put',
    'put_': 'tensortype.put_',
    'q_per_channel_axis': 'tensortype.q_per_channel_axis',
    'q_per_channel_scales': 'tensortype.q_per_channel_scales',
    'q_per_channel_zero_points': 'tensortype.q_per_channel_zero_points',
    'q_scale': 'tensortype.q_scale',
    'q_zero_point': 'tensortype.q_zero_point',
    'qr': 'tensortype.qr',
    'qscheme': 'tensortype.qscheme',
    'quantile': 'tensortype.quantile',
    'queue_callback': '_EngineBase.queue_callback',
    'rad2deg': 'tensortype.rad2deg',
    'rad2deg_': 'tensortype.rad2deg_',
    'random_': 'tensortype.random_',
    'ravel': 'type.ravel',
    'read': 'TextIOWrapper.read',
    'readable': 'TextIOWrapper.readable',
    'readall': 'FileIO.readall',
    'readinto': 'FileIO.readinto',
    'readline': 'TextIOWrapper.readline',
    'readlines': 'TextIOWrapper.readlines',
    'reciprocal_': 'tensortype.reciprocal_',
    'reconfigure': 'TextIOWrapper.reconfigure',
    'record_stream': 'tensortype.record_stream',
    'reduce': 'ufunc.reduce',
    'reduceat': 'ufunc.reduceat',
    'register_backward_hook': 'type.register_backward_hook',
    'register_full_backward_hook': 'type.register_full_backward_hook',
    'register_full_backward_pre_hook': 'type.register_full_backward_pre_hook',
    'register_hooks': 'SavedTensor.register_hooks',
    'register_load_state_dict_post_hook': 'type.register_load_state_dict_post_hook',
    'register_load_state_dict_pre_hook': 'type.register_load_state_dict_pre_hook',
    'register_post_accumulate_grad_hook': 'tensortype.register_post_accumulate_grad_hook',
    'register_prehook': 'FunctionMeta.register_prehook',
    'register_state_dict_post_hook': 'type.register_state_dict_post_hook',
    'register_state_dict_pre_hook': 'type.register_state_dict_pre_hook',
    'reinforce': 'tensortype.reinforce',
    'release': 'memoryview.release',
    'remainder_': 'tensortype.remainder_',
    'removeFilter': 'Logger.removeFilter',
    'removeHandler': 'Logger.removeHandler',
    'removeprefix': 'TorchVersion.removeprefix',
    'removesuffix': 'TorchVersion.removesuffix',
    'renorm': 'tensortype.renorm',
    'renorm_': 'tensortype.renorm_',
    'reset_running_stats': 'type.reset_running_stats',
    'resize': 'type.resize',
    'resize_': 'tensortype.resize_',
    'resize_as': 'tensortype.resize_as',
    'resize_as_': 'tensortype.resize_as_',
    'resize_as_sparse_': 'tensortype.resize_as_sparse_',
    'resolve_conj': 'tensortype.resolve_conj',
    'resolve_dtypes': 'ufunc.resolve_dtypes',
    'resolve_neg': 'tensortype.resolve_neg',
    'rfind': 'TorchVersion.rfind',
    'rindex': 'TorchVersion.rindex',
    'root': 'Logger.root',
    'rot90': 'tensortype.rot90',
    'round_': 'tensortype.round_',
    'row_indices': 'tensortype.row_indices',
    'rpartition': 'TorchVersion.rpartition',
    'rsqrt_': 'tensortype.rsqrt_',
    'run_backward': '_EngineBase.run_backward',
    'save_for_forward': 'FunctionMeta.save_for_forward',
    'scatter_reduce': 'tensortype.scatter_reduce',
    'scatter_reduce_': 'tensortype.scatter_reduce_',
    'searchsorted': 'type.searchsorted',
    'seed': 'OpaqueBaseMeta.seed',
    'seek': 'TextIOWrapper.seek',
    'seekable': 'TextIOWrapper.seekable',
    'select_scatter': 'tensortype.select_scatter',
    'send': 'generator.send',
    'setLevel': 'Logger.setLevel',
    'setLogRecordFactory': 'Manager.setLogRecordFactory',
    'setLoggerClass': 'Manager.setLoggerClass',
    'set_': 'tensortype.set_',
    'set_extra_state': 'type.set_extra_state',
    'set_offset': 'OpaqueBaseMeta.set_offset',
    'set_state': 'OpaqueBaseMeta.set_state',
    'set_submodule': 'type.set_submodule',
    'setfield': 'type.setfield',
    'setflags': 'type.setflags',
    'setup_context': 'FunctionMeta.setup_context',
    'sgn': 'tensortype.sgn',
    'sgn_': 'tensortype.sgn_',
    'share_memory': 'type.share_memory',
    'share_memory_': 'tensortype.share_memory_',
    'sign_': 'tensortype.sign_',
    'signbit': 'tensortype.signbit',
    'sin_': 'tensortype.sin_',
    'sinc': 'tensortype.sinc',
    'sinc_': 'tensortype.sinc_',
    'sinh': 'tensortype.sinh',
    'sinh_': 'tensortype.sinh_',
    'slice_inverse': 'tensortype.slice_inverse',
    'slice_scatter': 'tensortype.slice_scatter',
    'slogdet': 'tensortype.slogdet',
    'smm': 'tensortype.smm',
    'solve': 'tensortype.solve',
    'sparse_dim': 'tensortype.sparse_dim',
    'sparse_mask': 'tensortype.sparse_mask',
    'sparse_resize_': 'tensortype.sparse_resize_',
    'sparse_resize_and_clear_': 'tensortype.sparse_resize_and_clear_',
    'split_with_sizes': 'tensortype.split_with_sizes',
    'square_': 'tensortype.square_',
    'sspaddmm': 'tensortype.sspaddmm',
    'start_dim': 'Flatten.start_dim',
    'stft': 'tensortype.stft',
    'storage': 'tensortype.storage',
    'storage_type': 'tensortype.storage_type',
    'subtract': 'type.subtract',
    'subtract_': 'tensortype.subtract_',
    'sum_to_size': 'tensortype.sum_to_size',
    'svd': 'tensortype.svd',
    'swapaxes_': 'tensortype.swapaxes_',
    'swapcase': 'TorchVersion.swapcase',
    'swapdims_': 'tensortype.swapdims_',
    'symeig': 'tensortype.symeig',
    'symmetric_difference': '_SpecialGenericAlias.symmetric_difference',
    'symmetric_difference_update': '_SpecialGenericAlias.symmetric_difference_update',
    'tan': 'tensortype.tan',
    'tan_': 'tensortype.tan_',
    'tell': 'TextIOWrapper.tell',
    'throw': 'generator.throw',
    'to_bytes': 'int.to_bytes',
    'to_dense': 'tensortype.to_dense',
    'to_device': 'type.to_device',
    'to_empty': 'type.to_empty',
    'to_mkldnn': 'tensortype.to_mkldnn',
    'to_padded_tensor': 'tensortype.to_padded_tensor',
    'to_sparse': 'tensortype.to_sparse',
    'to_sparse_bsc': 'tensortype.to_sparse_bsc',
    'to_sparse_bsr': 'tensortype.to_sparse_bsr',
    'to_sparse_coo': 'tensortype.to_sparse_coo',
    'to_sparse_csc': 'tensortype.to_sparse_csc',
    'to_sparse_csr': 'tensortype.to_sparse_csr',
    'tobytes': 'type.tobytes',
    'tofile': 'type.tofile',
    'toreadonly': 'memoryview.toreadonly',
    'total': 'type.total',
    'trace': 'type.trace',
    'translate': 'TorchVersion.translate',
    'triangular_solve': 'tensortype.triangular_solve',
    'true_divide_': 'tensortype.true_divide_',
    'trunc_': 'tensortype.trunc_',
    'truncate': 'TextIOWrapper.truncate',
    'types': 'ufunc.types',
    'unique_consecutive': 'tensortype.unique_consecutive',
    'unpack': 'SavedTensor.unpack',
    'unsafe_chunk': 'tensortype.unsafe_chunk',
    'unsafe_split': 'tensortype.unsafe_split',
    'unsafe_split_with_sizes': 'tensortype.unsafe_split_with_sizes',
    'untyped_storage': 'tensortype.untyped_storage',
    'vdot': 'tensortype.vdot',
    'vjp': 'FunctionMeta.vjp',
    'vmap': 'FunctionMeta.vmap',
    'vsplit': 'tensortype.vsplit',
    'warn': 'Logger.warn',
    'with_traceback': 'OwnError.with_traceback',
    'writable': 'TextIOWrapper.writable',
    'writelines': 'TextIOWrapper.writelines',
    'xlogy': 'tensortype.xlogy',
    'xlogy_': 'tensortype.xlogy_',
    'xpu': 'type.xpu',
}



# ============================================================================= autograder/rule/tables.py

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



# ============================================================================= autograder/rule/source.py

class UnreadableSource(ValueError):
    """Bytes Python would not read as source code; the message is one line for the student."""


# ----------------------------------------------------------------------------- reading a file

def read_source(path) -> str:
    """The text of the Python file at ``path``, decoded as Python itself decodes it (see
    :func:`decode_source`). The grader, the public tests and this script all read your files
    with it, so they agree with Python and with each other. Raises OSError if it cannot be read."""
    path = Path(path)
    return decode_source(path.read_bytes(), path.name)


def decode_source(data: bytes, filename: str) -> str:
    """``data`` decoded as Python decodes a source file: UTF-8 unless a PEP 263 coding line says
    otherwise, a UTF-8 byte-order mark dropped, and CRLF or CR line endings read as newlines.
    Raises UnreadableSource with one line to show for bytes Python would refuse to import."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:  # bytes on the first two lines that are not UTF-8, or a coding line Python rejects
        encoding, refused = "utf-8", f"{filename} has a coding line Python does not accept ({exc.msg}): " \
                                     "save it as UTF-8 without one"
    else:
        refused = None
    try:
        text = data.decode(encoding)  # "utf-8-sig" (detect_encoding's name when a BOM is there) drops it
    except UnicodeDecodeError as exc:
        if not _python_reads(data):
            line = data.count(b"\n", 0, exc.start) + 1
            shown = "UTF-8" if encoding.startswith("utf-8") else encoding
            raise UnreadableSource(f"{filename} is not valid {shown} (byte 0x{data[exc.start]:02x} at line {line}): "
                                   "save it as UTF-8") from None
        text = data.decode(encoding, errors="replace")  # Python skips such bytes in comments: so do we
    if refused:
        raise UnreadableSource(refused)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _python_reads(data):
    """Does Python import these bytes? It skips undecodable bytes in comments (3.11 does)."""
    try:
        compile(data, "<source>", "exec", flags=ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError):
        return False
    return True



# ============================================================================= autograder/rule/checker.py

# The hint a finding ends with when its check gives none of its own; every refusal says what to write.
BUILTIN_HINT = "write it yourself with matmul, softmax and masked_fill"
HIDDEN_HINT = "write the call out plainly, e.g. torch.softmax(scores, dim=-1)"
IMPORT_HINT = f"this lab's files may import only {ALLOWED_IMPORTS}"
MEMBER_HINT = "use the tensor and layer methods listed in README.md section 5, or your own attributes"
TOP_IMPORT_HINT = "import modules once, at the top of the file (import torch.nn.functional as F)"


class Violation(NamedTuple):
    filename: str
    line: int
    name: str  # what is not allowed, e.g. "torch.nn.MultiheadAttention" or "exec"
    message: str  # one line, ready to show to the student
    # "builtin": one of torch's attention built-ins, named in the code;
    # "hidden": code the checker cannot prove harmless (every test that runs the file gets no points).
    kind: str = "builtin"


# ----------------------------------------------------------------------------- the from-scratch rule

def _builtin(path):
    """The forbidden attention built-in a dotted path like 'torch.nn.functional.x' names, or None."""
    parts = path.split(".")
    if parts[0] in STUDENT_MODULES:
        return None
    last = parts[-1]
    if last in ("MultiheadAttention", "multi_head_attention_forward"):
        return FORBIDDEN[last]
    # Only torch's: your own scaled_dot_product_attention is the point of the lab.
    if parts[0] == "torch" and "scaled_dot_product" in last:
        return FORBIDDEN["scaled_dot_product_attention"]
    if parts[0] == "torch" and (last in TRANSFORMERS or last == "flex_attention"):
        return f"torch.nn.{last}" if last in TRANSFORMERS else FORBIDDEN[last]
    return None


def _dunder(name):
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _importable(module):
    return module in MODULES or module in ANNOTATION_ONLY or module in STUDENT_MODULES


def _module_names(path, annotation):
    """The names code may take from the module at ``path``; annotations may also take ANNOTATION_ONLY's."""
    names = set(MODULES.get(path, ()))
    if annotation:
        names |= set(ANNOTATION_ONLY.get(path, ()))
        names |= {m[len(path) + 1:].split(".")[0] for m in ANNOTATION_ONLY if m.startswith(path + ".")}
    return names


def _is_module_path(path, annotation):
    return path in MODULES or (annotation and path in ANNOTATION_ONLY)


def _suggest(name, choices):
    close = difflib.get_close_matches(name, sorted(choices), n=2, cutoff=0.75)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _literal_template(node):
    """Is ``node`` a string literal whose {fields} read no attribute and no item (str.format stays plain)?"""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return False
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(node.value) if field]
    except ValueError:
        return False
    return not any("." in field or "[" in field for field in fields)


def _own_name_pattern(node):
    """f"w_{i}": a name built at run time that starts with a written letter, so it is never special or
    private; setattr(self, f"w_{i}", ...) may write such a name (never read one)."""
    return (isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)
            and isinstance(node.values[0].value, str) and node.values[0].value[:1].isalpha())


# nn.Module's methods that give a layer an attribute by a written name (register_buffer("mask", ...): self.mask).
REGISTERS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})


class _Exports(NamedTuple):
    modules: dict  # top-level name -> the module it is bound to (import torch.nn as nn: nn -> torch.nn)
    names: frozenset  # every top-level name (what `from attention import *` brings)
    own: frozenset  # the attribute names it defines (a base class there gives self.helper here)
    classes: frozenset  # the classes it defines
    methods: frozenset  # the instance methods its classes define (never read through a class)


def _exports(source):
    """What the other student file offers to `from attention import ...`, or None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    modules, names = {}, set()
    for node in _top_level(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                modules[name] = alias.name if alias.asname else name
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name != "*" and f"{node.module}.{alias.name}" in MODULES:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in tree.body:
        for child in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
    names |= set(modules)
    nodes = list(ast.walk(tree))
    return _Exports(modules, frozenset(n for n in names if not n.startswith("_")), frozenset(_own_names(nodes)),
                    frozenset(_classes(nodes)), frozenset(_instance_methods(nodes)))


def _own_names_of(node):
    """The attribute names ``node`` itself defines (for the line of a finding)."""
    names = set(_own_names(ast.walk(node))) if isinstance(node, ast.stmt) else set()
    return names | ({node.attr} if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) else set())


def _own_names(nodes):
    """Attribute names the ``nodes`` of a file (``ast.walk``'s) define: self.x = ..., methods and class
    attributes, setattr(obj, "x", ...)."""
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    targets = statement.targets if isinstance(statement, ast.Assign) else [
                        statement.target] if isinstance(statement, ast.AnnAssign) else []
                    yield from (t.id for t in targets if isinstance(t, ast.Name))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and len(node.args) == 3 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            yield node.args[1].value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REGISTERS
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value  # self.register_buffer("mask", ...) gives self.mask
        elif (isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "namedtuple"
                                              or getattr(node.func, "attr", None) == "namedtuple") and len(node.args) == 2):
            fields = node.args[1]  # namedtuple("Out", "output weights") or (..., ["output", "weights"])
            if isinstance(fields, ast.Constant) and isinstance(fields.value, str):
                yield from fields.value.replace(",", " ").split()
            elif isinstance(fields, (ast.List, ast.Tuple)):
                yield from (e.value for e in fields.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


def _instance_methods(nodes):
    """The names of the instance methods the ``nodes`` of a file define in class bodies (not static or class
    methods): read through a class, such a method takes any object as its self."""
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _dunder(statement.name) \
                        and _method_kind(statement) == "method":
                    yield statement.name


def _method_kind(function):
    """"static", "class" or "method": what the decorators of a def in a class body make it."""
    names = {getattr(d, "id", getattr(d, "attr", None)) for d in function.decorator_list}
    return "static" if "staticmethod" in names else "class" if "classmethod" in names else "method"


def _classes(nodes):
    """The classes the ``nodes`` of a file define."""
    return {node.name for node in nodes if isinstance(node, ast.ClassDef)}


def _top_level(tree):
    """The statements run when the module loads: the body, and the bodies of its top-level if and try."""
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.If):
            pending += node.body + node.orelse
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            pending += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]


class _Checker:
    """Checks one file against the rule. It reads the tree once with an explicit stack (no recursion),
    then passes over its nodes, listed once in ``ast.walk``'s order, to bind names, to collect the file's
    own attributes and to check each node; every name, attribute and call is decided by the tables;
    anything else is a finding. (The order matters: a line keeps its first "hidden" finding.)"""

    def __init__(self, source, filename, sibling):
        self.source, self.filename, self.sibling = source, filename, sibling
        self.violations = {}  # (line, name or "") -> Violation
        self.parent = {}  # id(node) -> its parent
        self.modules = {}  # name -> module path, bound once by a top-level import
        self.own_modules = set()  # names bound to your other file (import attention)
        self.annotation_only = {}  # name -> dotted path, for names only annotations may use
        self.bound = set()  # every name the file binds
        self.rebound = set()  # top-level names bound otherwise than by a class statement or an import
        self.imported_values = {}  # name -> the dotted paths an import binds it to (from torch.nn import Module)
        self.class_aliases = set()  # names bound to a class of your other file (from attention import A as B)
        self.unread_imports = set()  # names imported from your other file when it cannot be read
        self.aliased = set()  # ids of the class names a top-level `Alias = YourClass` names
        self.local_names = {}  # id of a def, lambda or comprehension -> the names bound in it
        self.own = set()  # attribute names your file defines
        self.in_annotation = set()  # ids of the nodes inside a type annotation
        self.in_decorator = set()  # ids of the nodes inside a decorator
        self.own_prefixes = set()  # "w_" for setattr(self, f"w_{name}", ...): its names are your own too
        self.classes = set()  # the classes the two files define
        self.methods = set()  # the instance methods those classes define
        self.lines = None  # the file's lines as bytes, split once, for the code a finding quotes
        self.nodes = []  # every node of the tree, in ast.walk's order

    # -- findings

    def add(self, node, name, message, kind="hidden", hint=None):
        key = (node.lineno, name if kind == "builtin" else "")
        if key not in self.violations:
            hint = hint if hint is not None else (BUILTIN_HINT if kind == "builtin" else HIDDEN_HINT)
            if id(node) in self.in_decorator and kind != "builtin":  # @torch.jit.ignore and the like
                hint = f"remove the decorator @{self.decorator_of(node)}: the grader runs your code as plain Python"
            self.violations[key] = Violation(self.filename, node.lineno, name,
                                             f"{self.filename}, line {node.lineno}: {message}; {hint}", kind)

    def decorator_of(self, node):
        """The code of the whole decorator ``node`` stands in."""
        while id(self.parent.get(id(node))) in self.in_decorator:
            node = self.parent[id(node)]
        return self.shown(node)

    def shown(self, node):
        text = " ".join(self.segment(node).split())
        return text if len(text) <= 60 else text[:57] + "..."

    def segment(self, node):
        """The code of ``node``, as ``ast.get_source_segment`` gives it. That splits the whole file on every
        call; this splits it once (a long file with many findings took a twentieth of a second per grade)."""
        if getattr(node, "end_lineno", None) is None or getattr(node, "end_col_offset", None) is None:
            return ""
        if self.lines is None:  # split on \n, \r and \r\n, as the parser does (not on form feeds)
            self.lines = [line.encode() for line in io.StringIO(self.source, newline="").readlines()]
        first, last = node.lineno - 1, node.end_lineno - 1  # the offsets count UTF-8 bytes
        if first == last:
            return self.lines[first][node.col_offset:node.end_col_offset].decode()
        return (self.lines[first][node.col_offset:] + b"".join(self.lines[first + 1:last])
                + self.lines[last][:node.end_col_offset]).decode()

    def builtin(self, node, path):
        """Report ``path`` if it is one of torch's attention built-ins; True if it was."""
        name = _builtin(path)
        if name is None:
            return False
        shown = self.shown(node) or path
        what = f"{shown} is {name}, which" if shown != name else name
        self.add(node, name, f"{what} is not allowed in this lab", "builtin")
        return True

    # -- the pass over the tree

    def run(self, tree):
        if not self.index(tree):
            return
        self.nodes = list(ast.walk(tree))
        self.bind(tree)
        for node in self.nodes:
            self.check(node)

    def index(self, tree):
        """Parent links and annotation spans; False (with a finding) for code too large or too deep to check."""
        stack, count = [(tree, 0, False, False)], 0
        while stack:
            node, depth, annotation, decorator = stack.pop()
            count += 1
            if depth > MAX_DEPTH or count > MAX_NODES:
                line = getattr(node, "lineno", 1)
                what = f"nested more than {MAX_DEPTH} levels deep" if depth > MAX_DEPTH else "too large"
                self.violations = {}
                self.add(types.SimpleNamespace(lineno=line), "too deep",
                         f"the code here is {what} for the grader to check",
                         hint="split it into shorter expressions and functions")
                return False
            if annotation:
                self.in_annotation.add(id(node))
            if decorator:
                self.in_decorator.add(id(node))
            for field, child in ast.iter_fields(node):
                children = child if isinstance(child, list) else [child]
                for item in children:
                    if isinstance(item, ast.AST):
                        self.parent[id(item)] = node
                        starts = field in ("annotation", "returns") and not isinstance(node, ast.Lambda)
                        stack.append((item, depth + 1, annotation or starts, decorator or field == "decorator_list"))
        return True

    # -- what each name is bound to

    def bind(self, tree):
        top = {id(node) for node in _top_level(tree)}
        for node in self.nodes:
            if isinstance(node, ast.Import):
                self.bind_import(node, id(node) in top)
            elif isinstance(node, ast.ImportFrom):
                self.bind_from(node, id(node) in top)
        for node in self.nodes:
            for name in self.binds(node):
                self.bound.add(name)
                if not isinstance(node, ast.ClassDef) and isinstance(self.scope(node), ast.Module):
                    self.rebound.add(name)  # a local B (B, T, _ = x.shape) leaves a class B a class
                if name in REFUSED_NAMES or name in ATTRIBUTE_FUNCTIONS:
                    self.add(node, name, f"the name {name} is reserved for Python's own built-in",
                             hint="give it another name")
                elif (name in self.modules or name in self.own_modules) and not isinstance(node, ast.alias):
                    self.add(node, name, f"{name} is the module {self.modules.get(name, name)} (imported at the "
                                         "top of the file) and may not be bound to anything else",
                             hint="give the other value another name")
        self.collect_own()

    def binds(self, node):
        """The names ``node`` binds, other than by an import (those are bound in bind_import/bind_from)."""
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            return [node.id]
        if isinstance(node, ast.arg):
            return [node.arg]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, ast.ExceptHandler) and node.name:
            return [node.name]
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return list(node.names)
        return []

    def bind_name(self, node, name, path, kind, top):
        """Bind ``name`` by an import: kind "module", "own" (your other file), "annotation" or "value"."""
        if kind in ("module", "own"):
            if not top:
                self.add(node, name, f"importing the module {path} inside a function or class is not allowed",
                         hint=TOP_IMPORT_HINT)
            known = self.modules.get(name) if kind == "module" else (name if name in self.own_modules else None)
            if name in self.bound or (name in self.modules or name in self.own_modules) and known != path:
                self.add(node, name, f"{name} is imported twice, as two different things",
                         hint="give each import its own name")
            (self.own_modules.add(name) if kind == "own" else self.modules.__setitem__(name, path))
        else:
            if name in self.modules or name in self.own_modules:
                self.add(node, name, f"{name} is the module {self.modules.get(name, name)} and may not be "
                                     "imported again as something else", hint="give the other import another name")
            self.bound.add(name)
            if kind == "annotation":
                self.annotation_only[name] = path
            elif path is not None:
                self.imported_values.setdefault(name, set()).add(path)  # from torch.nn import Module

    def bind_import(self, node, top):
        for alias in node.names:
            parts = alias.name.split(".")
            refused = [".".join(parts[:i]) for i in range(1, len(parts) + 1)
                       if not _importable(".".join(parts[:i]))]
            if refused:
                self.add(node, alias.name, f"importing {alias.name} is not allowed", hint=IMPORT_HINT)
                continue
            name = alias.asname or parts[0]
            path = alias.name if alias.asname else parts[0]
            self.bind_name(node, name, path, "own" if path in STUDENT_MODULES else "module", top)

    def bind_from(self, node, top):
        module = node.module or ""
        if node.level:
            self.add(node, "." * node.level + module, f"the relative import from {'.' * node.level}{module} is not "
                                                        "allowed", hint="write `from attention import ...`")
            return
        if not _importable(module):
            self.add(node, module, f"importing {module} is not allowed", hint=IMPORT_HINT)
            return
        for alias in node.names:
            if module in STUDENT_MODULES:
                self.bind_own(node, alias, top)
                continue
            if alias.name == "*":
                self.add(node, f"{module}.*", f"from {module} import * is not allowed",
                         hint=f"import the names you use, e.g. from {module} import ...")
                continue
            name, path = alias.asname or alias.name, f"{module}.{alias.name}"
            if alias.name in MODULES.get(module, ()):
                self.bind_name(node, name, path, "module" if path in MODULES else "value", top)
            elif alias.name in ANNOTATION_ONLY.get(module, ()):
                self.bind_name(node, name, path, "annotation", top)
            elif not self.builtin(node, path):
                self.add(node, path, f"{path} is not among the names this lab allows from {module}"
                                     f"{_suggest(alias.name, MODULES.get(module, ()))}", hint=IMPORT_HINT)

    def bind_own(self, node, alias, top):
        """`from attention import x`: a module of that file stays a module here; anything else is a value."""
        exports = self.sibling
        if alias.name == "*":
            if exports is None:
                return
            for name in exports.names:
                kind = "module" if name in exports.modules else "value"
                self.bind_name(node, name, exports.modules.get(name), kind, top)
                if name in exports.classes:
                    self.class_aliases.add(name)
            return
        name = alias.asname or alias.name
        if exports is not None and alias.name in exports.modules:
            self.bind_name(node, name, exports.modules[alias.name], "module", top)
        else:
            self.bind_name(node, name, None, "value", top)
            if exports is not None and alias.name in exports.classes:  # a class of yours, under this name here
                self.class_aliases.add(name)
            elif exports is None:  # the other file cannot be read: nothing of it runs, whatever it is
                self.unread_imports.add(name)

    def top_level_aliases(self, tree):
        """Names a top-level ``Alias = YourClass`` binds: another name of the class (a class still, so its methods
        are never read through it), not a value."""
        aliases, grown = set(), True
        while grown:
            grown = False
            for node in tree.body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                        and isinstance(node.value, ast.Name) and node.value.id in self.classes | aliases
                        and node.targets[0].id not in aliases):
                    aliases.add(node.targets[0].id)
                    self.aliased.add(id(node.value))
                    grown = True
        self.rebound -= aliases
        return aliases

    def collect_own(self):
        """Your files' attribute names (this one's and the other's); a name of the interpreter's is refused."""
        for name in set(_own_names(self.nodes)):
            if name in INTERPRETER_MEMBERS:
                line = next(getattr(n, "lineno", 1) for n in self.nodes if name in _own_names_of(n))
                self.add(types.SimpleNamespace(lineno=line), name,
                         f"the attribute name {name} is one of Python's own (it reaches the interpreter's frames "
                         "and code)", hint="give your attribute another name")
            elif not _dunder(name):
                self.own.add(name)
        if self.sibling is not None:
            self.own |= {name for name in self.sibling.own if name not in INTERPRETER_MEMBERS and not _dunder(name)}
        self.classes = _classes(self.nodes) | self.class_aliases | (
            self.sibling.classes if self.sibling is not None else frozenset())
        self.classes |= self.top_level_aliases(self.nodes[0])
        self.methods = set(_instance_methods(self.nodes)) | (
            self.sibling.methods if self.sibling is not None else frozenset())
        self.own_prefixes = {node.args[1].values[0].value for node in self.nodes
                             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                             and node.func.id == "setattr" and len(node.args) == 3 and _own_name_pattern(node.args[1])}

    # -- what each expression stands for

    def resolve(self, node):
        """("module", path), ("own", name) for your other file, ("leaf", path) for a module's name, or
        ("value", None): what ``node`` stands for, following attributes and getattr with a written name."""
        annotation = id(node) in self.in_annotation
        attrs = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif self.literal_getattr(node):
                attrs.append(node.args[1].value)
                node = node.args[0]
            else:
                break
        if not isinstance(node, ast.Name):
            return ("value", None)
        if node.id in self.modules:
            kind, path = "module", self.modules[node.id]
        elif node.id in self.own_modules:
            kind, path = "own", node.id
        else:
            return ("value", None)
        for attr in reversed(attrs):
            if kind == "module":
                child = f"{path}.{attr}"
                kind, path = ("module" if _is_module_path(child, annotation) else "leaf"), child
            elif kind == "own" and self.sibling is not None and attr in self.sibling.modules:
                kind, path = "module", self.sibling.modules[attr]
            else:
                return ("value", None)
        return (kind, path)

    def written_name_call(self, node):
        """getattr, setattr, hasattr or delattr with a written name: the same as naming the attribute."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))

    def literal_getattr(self, node):
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) in (2, 3) and not node.keywords and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str))

    # -- the checks

    def check(self, node):
        kind = type(node).__name__
        if kind in REFUSED_SYNTAX:
            self.add(node, kind, f"{REFUSED_SYNTAX[kind]} is not allowed in this lab's files",
                     hint="write it with plain functions, if and for")
        elif id(node) in self.in_annotation and not isinstance(node, ANNOTATION_SYNTAX):
            self.add(node, "annotation", f"the annotation {self.shown(node)} computes something",
                     hint="annotations may hold names, subscripts and strings only, e.g. Optional[Tensor]")
        elif isinstance(node, ast.BinOp) and id(node) in self.in_annotation and not isinstance(node.op, ast.BitOr):
            self.add(node, "annotation", f"the annotation {self.shown(node)} computes something",
                     hint="annotations may hold names, subscripts and strings only, e.g. Optional[Tensor]")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self.check_name(node)
        elif isinstance(node, ast.Name) and node.id in ("self", "cls"):  # a store or a del
            self.add(node, node.id, f"assigning to {node.id} is not allowed: it would no longer be your own object",
                     hint="give the value another name")
        elif isinstance(node, ast.Attribute):
            self.check_member(node, node.value, node.attr, not isinstance(node.ctx, ast.Load))
            kind, path = self.resolve(node)
            if kind in ("module", "own") and not self.chain_head(node):
                self.module_as_value(node, path)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_FUNCTIONS:
            self.check_attribute_function(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
            self.check_type_call(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REGISTERS:
            self.check_registered_name(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign,
                             ast.AugAssign)):
            self.check_special_binding(node)
        if isinstance(node, ast.ClassDef):
            self.check_class(node)

    # -- the language by construct: special methods, classes, type()

    def check_special_binding(self, node):
        """A special name bound in a class body (def or assignment) must be one of SPECIAL_METHODS, and one
        bound at the top of a module one of MODULE_SPECIALS: any other is a hook that a library or the
        interpreter calls by itself (numpy's __array_interface__, torch's __torch_function__)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        else:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]
        where = self.parent.get(id(node))
        for name in (n for n in names if _dunder(n)):
            if isinstance(where, ast.ClassDef):
                if name in SPECIAL_METHODS and not isinstance(node, ast.ClassDef):
                    continue
                allowed = ", ".join(SPECIAL_METHODS)
                self.add(node, name, f"defining {name} is not allowed: a library or Python itself calls such a "
                                     "special method on its own, which the grader cannot follow",
                         hint=f"remove it, and write a plain method you call yourself; a class may define only "
                              f"{allowed}")
            elif isinstance(where, ast.Module) and name in MODULE_SPECIALS:
                continue
            else:
                self.add(node, name, f"binding the special name {name} is not allowed here",
                         hint="give it a plain name (a module may set only __all__)")

    def check_class(self, node):
        """A class statement takes no keywords (no metaclass=) and does not derive from type (a metaclass)."""
        if node.keywords:
            self.add(node, "class keywords", f"class {node.name}(..., {node.keywords[0].arg}=...) is not allowed: a "
                                             "metaclass or class keyword runs code when the class is made",
                     hint=f"write class {node.name}(Base): with plain base classes")
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id == "type" and "type" not in self.bound:
                self.add(node, "metaclass", f"class {node.name}(type) makes a metaclass, which builds classes "
                                            "from a dict of any names", hint="derive from object or nn.Module")
            elif not self.allowed_base(base):
                self.add(node, "base class", f"class {node.name}({self.shown(base)}) is not allowed: an object of "
                                             "yours would hold that class's private parts",
                         hint="derive from nn.Module, autograd's Function, a class of yours or an exception; "
                              "keep a tensor as an attribute rather than deriving from it")

    def allowed_base(self, base):
        """Your own class, object, a Python exception, or one of BASES (Generic[T] and namedtuple(...) too)."""
        if isinstance(base, ast.Subscript):  # Generic[T], Protocol[T]
            base = base.value
        if isinstance(base, ast.Call):  # class Pair(namedtuple("Pair", "output weights"))
            base = base.func
        if isinstance(base, ast.Name):
            if (base.id in self.classes or base.id in self.unread_imports) and base.id not in self.rebound:
                return True
            if base.id in self.imported_values:
                return self.imported_values[base.id] <= BASES and base.id not in self.rebound
            return base.id not in self.bound and base.id in ALLOWED_BUILTINS and (
                base.id == "object" or base.id.endswith(("Error", "Exception", "Warning")))
        kind, path = self.resolve(base)
        if kind == "leaf":
            return path in BASES
        return isinstance(base, ast.Attribute) and base.attr in self.classes  # attention.MyAttention

    def check_type_call(self, node):
        """type(x) gives x's class: only its name (type(self).__name__) or a comparison (type(x) is T) is
        allowed. type(name, bases, dict) makes a class from a dict, whose keys may be any special name, and
        calling what type(x) gave could do the same (the class of a class is type)."""
        if "type" in self.bound:
            return
        parent = self.parent.get(id(node))
        if len(node.args) != 1 or node.keywords:
            self.add(node, "type", f"{self.shown(node)} is not allowed: type() with three arguments makes a class "
                                   "from a dict of any names", hint="write a class statement")
            return
        named = isinstance(parent, ast.Attribute) and parent.value is node and parent.attr == "__name__"
        compared = isinstance(parent, ast.Compare)
        checked = (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                   and parent.func.id in ("isinstance", "issubclass") and node in parent.args[1:])
        if not (named or compared or checked):
            self.add(node, "type", f"{self.shown(node)} is not allowed here: type(x) may be compared or named "
                                   "(type(x).__name__), not used otherwise",
                     hint="use isinstance(x, ...) to test a type, or type(x).__name__ for its name")

    def check_registered_name(self, node):
        """register_buffer("name", ...) and the like give the object an attribute by that name: never a special
        one (a layer registered as __array__ would answer numpy's protocol)."""
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and _dunder(node.args[0].value):
            self.add(node, node.args[0].value, f"{self.shown(node)} is not allowed: it gives your object the special "
                                               f"name {node.args[0].value}", hint="register it under a plain name")

    def chain_head(self, node):
        """Does ``node`` stand at the head of a longer name (``node.attr``, or getattr(node, "attr"))?"""
        parent = self.parent.get(id(node))
        return (isinstance(parent, ast.Attribute) and parent.value is node) or (
            self.written_name_call(parent) and parent.args[0] is node)

    def check_class_as_value(self, node):
        """Your class by name may be called, derived from, tested (isinstance), raised or caught, named in an
        annotation or given to super(); as any other value (stored, passed) its methods could be read through it."""
        parent = self.parent.get(id(node))
        if id(node) in self.in_annotation or id(node) in self.in_decorator or self.chain_head(node) \
                or id(node) in self.aliased:
            return
        if isinstance(parent, ast.Call) and (parent.func is node or (
                isinstance(parent.func, ast.Name) and parent.func.id in ("isinstance", "issubclass", "super"))):
            return
        if isinstance(parent, (ast.ClassDef, ast.ExceptHandler, ast.Raise, ast.Compare)):
            return
        if isinstance(parent, ast.Tuple) and isinstance(self.parent.get(id(parent)), (ast.ExceptHandler, ast.Call)):
            return  # except (A, B) and isinstance(x, (A, B))
        self.add(node, node.id, f"your class {node.id} used as a value is not allowed: its methods could be read "
                                "through it", hint=f"create the object here with {node.id}(...) and keep that")

    def scope(self, node):
        """The innermost def, lambda, class or module ``node`` is in."""
        scope = self.parent.get(id(node))
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                          ast.ClassDef, ast.Module)):
            scope = self.parent.get(id(scope))
        return scope

    def locally_bound(self, node):
        """Is the name ``node`` reads bound in a def, lambda or comprehension around it (a local B, not class B)?"""
        scope = self.parent.get(id(node))
        while scope is not None:
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp,
                                  ast.DictComp, ast.GeneratorExp)):
                if id(scope) not in self.local_names:
                    self.local_names[id(scope)] = {name for inner in ast.walk(scope) for name in self.binds(inner)
                                                   if inner is not scope}
                if node.id in self.local_names[id(scope)]:
                    return True
            scope = self.parent.get(id(scope))
        return False

    def check_name(self, node):
        name, parent = node.id, self.parent.get(id(node))
        head = self.chain_head(node)
        if name in self.classes and name not in self.rebound and not self.locally_bound(node):
            self.check_class_as_value(node)
        if name in self.methods and isinstance(self.scope(node), ast.ClassDef) and id(node) not in self.in_decorator:
            self.add(node, name, f"the method {name} used as a value in its class body is not allowed: through "
                                 "the class it would take any object as its self",
                     hint="call it on your object (self.name(...)) from a method instead")
        if name in self.annotation_only:
            if id(node) not in self.in_annotation:
                self.add(node, name, f"{self.annotation_only[name]} may only be used in type annotations",
                         hint=f"keep {name} in annotations such as x: {name}[...], or remove it")
        elif name in self.modules or name in self.own_modules:
            if not head:
                self.module_as_value(node, self.modules.get(name, name))
        elif name in ATTRIBUTE_FUNCTIONS:
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.add(node, name, f"{name} passed around as a value is not allowed",
                         hint="name the attribute, e.g. self.w_q")
        elif name in REFUSED_NAMES or (_dunder(name) and name not in ALLOWED_BUILTINS):
            self.add(node, name, f"{name} is not allowed: it can run or reach code the grader cannot read")
        elif name not in self.bound and hasattr(builtins, name) and name not in ALLOWED_BUILTINS:
            self.add(node, name, f"the built-in {name} is not allowed in this lab's files",
                     hint="correct attention code does not need it")

    def module_as_value(self, node, path):
        parent, shown = self.parent.get(id(node)), self.shown(node)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            hint = f"import it by name instead: import {path} as {parent.targets[0].id}"
        else:
            hint = f"call its functions directly, e.g. {shown}.<function>(...)"
        self.add(node, f"module {shown} as a value", f"the module {shown} used as a value hides what is called "
                                                     "from it", hint=hint)

    def check_member(self, node, owner, attr, store):
        """``owner.attr`` (or getattr/setattr with the written name ``attr``)."""
        annotation = id(node) in self.in_annotation
        kind, path = self.resolve(owner)
        shown = self.shown(node) or attr
        if kind == "module":
            if attr.startswith("_") and not _dunder(attr):
                self.add(node, f"{path}.{attr}", f"{shown} is not allowed: private names of {path} reach past "
                                                 "what the grader can check")
            elif attr in _module_names(path, annotation):
                if store:
                    self.add(node, f"{path}.{attr}", f"assigning to {shown} changes {path} itself",
                             hint="keep your own values in your own names and objects")
            elif not self.builtin(node, f"{path}.{attr}"):
                listed = _module_names(path, annotation)
                why = f"{path}.{attr} is not among the names this lab allows from {path}{_suggest(attr, listed)}"
                if attr in ANNOTATION_ONLY.get(path, ()) or f"{path}.{attr}" in ANNOTATION_ONLY:
                    why = f"{path}.{attr} may only be used in type annotations"
                self.add(node, f"{path}.{attr}", f"{shown} is not allowed: {why}", hint="see README.md section 5")
            return
        if kind == "own":
            if _dunder(attr) or attr.startswith("_"):
                self.add(node, attr, f"{shown} is not allowed: private and special names of your other file "
                                     "are its own", hint="import the name you need: from attention import ...")
            return
        parent = self.parent.get(id(node))
        if kind == "leaf" and store:
            self.add(node, attr, f"assigning to {shown} changes {path} itself",
                     hint="keep your own values in your own names and objects")
        elif _dunder(attr):
            called = isinstance(parent, ast.Call) and parent.func is node
            via_super = isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"
            own_class = isinstance(owner, ast.Name) and owner.id in self.classes  # Base.__init__(self), Base yours
            init = attr == "__init__" and called and (via_super or own_class or kind == "leaf")
            class_name = (attr == "__class__" and not store and isinstance(parent, ast.Attribute)
                          and parent.attr == "__name__")  # self.__class__.__name__: a string, as type(self).__name__
            if not (init or class_name or (attr == "__name__" and not store)):  # a name is a string
                self.add(node, attr, f"{shown} is not allowed: {attr} reaches inside other objects",
                         hint="special names are only for super().__init__(...); use type(x), isinstance, len")
        elif attr in self.methods and self.unbound_super(owner) and not store:
            self.add(node, attr, f"{shown} is not allowed: this super() hands out the method unbound, to take any "
                                 "object as its self", hint=f"write super().{attr}(...) in a method of your class")
        elif attr in self.methods and self.class_reference(owner) and not store:
            self.add(node, attr, f"{shown} is not allowed: a method read through its class takes any object as "
                                 "its self", hint=f"call it on your object: self.{attr}(...) or obj.{attr}(...)")
        elif attr.startswith("_"):
            if not (self.own_self(owner) or (isinstance(owner, ast.Name) and owner.id in self.classes)):
                self.add(node, attr, f"{shown} is not allowed: private names are only for your own objects "
                                     "(self._name in a method of your class)")
        elif attr in LIBRARY_NAMES and attr not in MEMBERS and not store:
            self.library_name(node, attr, shown)
        elif attr == "format" and not store:
            if not _literal_template(owner):
                self.add(node, attr, f"{shown} is not allowed: a template that is not written out can read "
                                     "any attribute", hint='use an f-string, e.g. f"{d_model} is not divisible"')
        elif attr not in MEMBERS and attr not in self.own and not self.own_by_prefix(attr) and not store:
            self.add(node, attr, f"{shown} is not allowed: {attr} is neither a member this lab lists for "
                                 f"tensors, layers and Python values nor a name your file defines"
                                 f"{_suggest(attr, MEMBERS | self.own)}", hint=MEMBER_HINT)

    def unbound_super(self, node):
        """Is ``node`` a super() that gives unbound methods: super(A, B) whose second argument is not the self
        of a method of yours, or super() in a def that is not an instance method?"""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"):
            return False
        if node.args:
            return len(node.args) != 2 or not (self.own_self(node.args[1]) and node.args[1].id == "self")
        function = self.scope(node)
        return not (isinstance(function, ast.FunctionDef) and isinstance(self.parent.get(id(function)), ast.ClassDef)
                    and _method_kind(function) == "method")

    def class_reference(self, node):
        """Is ``node`` one of your classes (its name, cls, or module.Class)?"""
        if isinstance(node, ast.Name):
            return node.id in self.classes or node.id == "cls"
        return isinstance(node, ast.Attribute) and node.attr in self.classes

    def own_self(self, node):
        """Is ``node`` the self (or cls) of a method of your class: the first parameter of the def that binds
        that name, a def in a class body (self: an instance method; cls: a classmethod)? Then it is your own
        object, since no method is read through its class (``class_reference``) and self is never rebound."""
        if not (isinstance(node, ast.Name) and node.id in ("self", "cls")):
            return False
        function = self.parent.get(id(node))
        while function is not None:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node.id in {
                    a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs}:
                break
            function = self.parent.get(id(function))
        if not isinstance(function, ast.FunctionDef) or not isinstance(self.parent.get(id(function)), ast.ClassDef):
            return False
        first = (function.args.posonlyargs + function.args.args)[:1]
        kind = _method_kind(function)
        return bool(first) and first[0].arg == node.id and (kind == "method") == (node.id == "self") and kind != "static"

    def library_name(self, node, attr, shown):
        """``attr`` is a library's own attribute (``LIBRARY_NAMES``): a name of yours that equals it would read
        theirs on such a value, which reaches past the tables (numpy's arrays: .ctypes, raw memory)."""
        example = LIBRARY_NAMES[attr]
        self.add(node, attr, f"{shown} is not allowed: {attr} is also an attribute of library objects ({example}) "
                             "that this lab does not list, so the grader cannot tell yours from theirs",
                 hint=f"give your attribute another name, e.g. {attr.strip('_')}_"
                      if attr in self.own or self.own_by_prefix(attr) else MEMBER_HINT)

    def own_by_prefix(self, attr):
        """self.w_o after setattr(self, f"w_{name}", ...): a name with a prefix your file writes that way."""
        return attr not in INTERPRETER_MEMBERS and any(attr.startswith(prefix) for prefix in self.own_prefixes)

    def check_attribute_function(self, node):
        func, args = node.func.id, node.args
        arity = {"getattr": (2, 3), "setattr": (3,), "hasattr": (2,), "delattr": (2,)}[func]
        plain = f"name the attribute, e.g. self.w_q, or {func}(obj, \"name\")"
        if node.keywords or len(args) not in arity:
            self.add(node, func, f"{self.shown(node)} is not allowed: {func} takes its arguments in order here",
                     hint=plain)
        elif func == "hasattr" and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            kind, path = self.resolve(args[0])  # a bool: whether the object has it, never the attribute itself
            if kind == "module":  # hasattr(F, "scaled_dot_product_attention") still names the built-in
                self.builtin(node, f"{path}.{args[1].value}")
        elif isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            self.check_member(node, args[0], args[1].value, func in ("setattr", "delattr"))
        elif not (func == "setattr" and isinstance(args[0], ast.Name) and args[0].id == "self"
                  and _own_name_pattern(args[1])):
            # Only a write is provable: setattr(self, f"w_{i}", ...) can write a plain name, never read one.
            # A read by a computed name (getattr(self, f"g{n}")) could reach whatever any object holds.
            if func == "setattr":
                hint = f"{plain}, or setattr(self, f\"w_{{i}}\", ...) with written letters first, on self"
            else:
                hint = "write the name out (self.w_q(x)), or keep the layers in an nn.ModuleDict: self.proj[name]"
            self.add(node, f"{func} with a computed name",
                     f"{func}({self.shown(args[0])}, <computed name>) is not allowed: it hides which attribute "
                     "is used", hint=hint)


def find_forbidden_calls(source: str, filename: str, sibling: "str | None" = None) -> "list[Violation]":
    """Every use of torch's attention built-ins in ``source`` (kind "builtin") and everything the rule
    cannot prove harmless (kind "hidden"), in line order: see the tables above and README.md section 5.

    ``sibling`` is the text of your other file (attention.py for mha.py and back), so that
    `from attention import torch` is known to be a module. Code too large or too deep to check is
    one finding, never an error of the checker. Raises SyntaxError if ``source`` does not parse.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except (RecursionError, MemoryError):
        return [Violation(filename, 1, "too deep", f"{filename}, line 1: the code is nested too deeply for Python "
                                                   "to read; split it into shorter expressions", "hidden")]
    except ValueError as exc:  # a NUL byte (older Pythons raise ValueError, not SyntaxError)
        raise SyntaxError(str(exc)) from None
    checker = _Checker(source, filename, None if sibling is None else _exports(sibling))
    checker.run(tree)
    return sorted(checker.violations.values(), key=lambda v: (v.line, v.name))


def refusal(violations, name):
    """What a test that runs ``name`` (a function or class of a refused file) says, in `make test` and in
    the grade alike: the first finding, how many more, and why no such test counts."""
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    return (f"{name} is not graded: {violations[0].message}{more}. The grader cannot tell what such code "
            "calls, so no test that runs it counts (the from-scratch rule).")


def file_findings(folder, filename) -> "list[Violation]":
    """find_forbidden_calls on ``folder/filename``, with the other file of the pair as its sibling: the one
    call `make submit`, `make test` and the grader all make. Raises OSError if the file cannot be read,
    UnreadableSource for bytes Python refuses, SyntaxError if it does not parse."""
    folder = Path(folder)
    other = next(f for f in FILES if f != filename) if filename in FILES else None
    try:
        sibling = read_source(folder / other) if other else None
    except (OSError, ValueError):
        sibling = None  # missing or unreadable: it is reported on its own, and imports nothing here
    return find_forbidden_calls(read_source(folder / filename), filename, sibling)



# ============================================================================= autograder/rule/submit_cli.py

ZIP_NAME = "submission.zip"
IMPORT_TIMEOUT = 120  # seconds: a cold `import torch` can be slow on a laptop
UPLOAD = "upload it to this lab's assignment on Gradescope"


class SubmitError(Exception):
    """A problem with the submission, explained in one line."""


# ----------------------------------------------------------------------------- checks

# Runs in a child process, so a crash or a hang at import time cannot take submit.py down.
_IMPORT_CHECK = r"""
import os, sys, traceback
folder = os.path.abspath(sys.argv[1])
sys.path.insert(0, folder)
sys.dont_write_bytecode = True
for name in ("attention", "mha"):
    try:
        __import__(name)
    except BaseException as exc:
        where = [f for f in traceback.extract_tb(exc.__traceback__)
                 if os.path.dirname(os.path.abspath(f.filename)) == folder]
        at = f" ({os.path.basename(where[-1].filename)}, line {where[-1].lineno})" if where else ""
        extra = " (is torch installed for this python?)" if getattr(exc, "name", "") == "torch" else ""
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        print(f"\nIMPORT-FAILED cannot import {name}.py: {text}{at}{extra}")
        sys.exit(3)
"""


def check_source(folder, filename):
    """Fail unless the file exists, parses and uses no forbidden function."""
    path = folder / filename
    if not path.is_file():
        raise SubmitError(f"{filename} not found in {folder}")
    try:
        source = read_source(path)
    except UnreadableSource as exc:
        raise SubmitError(str(exc)) from None
    try:
        violations = file_findings(folder, filename)
    except SyntaxError as exc:
        raise SubmitError(f"{filename} has a syntax error at line {exc.lineno}: {exc.msg}") from None
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise SubmitError(violations[0].message + more)
    return source


def check_imports(folder):
    """Fail unless both files import, in a fresh Python with the folder first on sys.path."""
    try:
        child = subprocess.run([sys.executable, "-c", _IMPORT_CHECK, str(folder)], cwd=folder,
                               capture_output=True, text=True, timeout=IMPORT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise SubmitError(f"importing your files took over {IMPORT_TIMEOUT} s: "
                          "does code outside the functions run at import time?") from None
    if child.returncode == 0:
        return
    failed = [line for line in child.stdout.splitlines() if line.startswith("IMPORT-FAILED ")]
    if failed:
        raise SubmitError(failed[-1].removeprefix("IMPORT-FAILED "))
    raise SubmitError(f"importing your files stopped Python (exit code {child.returncode})")


EXTRA_CREDIT = {"tiled_attention", "MultiHeadAttention.step"}  # optional: skipping them costs nothing else


def unfinished(source, filename):
    """'causal_mask (attention.py)' for every function that still raises NotImplementedError."""
    def names_it(node):
        node = node.func if isinstance(node, ast.Call) else node
        return isinstance(node, ast.Name) and node.id == "NotImplementedError"

    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef) and any(
                        isinstance(n, ast.Raise) and n.exc is not None and names_it(n.exc) for n in ast.walk(child)):
                    found.append(name)
                walk(child, f"{name}.")
    walk(ast.parse(source), "")
    return [f"{name} ({filename})" for name in found if not any(name.startswith(f"{f}.") for f in found)]


def remove_stale_zip(target):
    """Delete an earlier zip so it cannot be uploaded by mistake; return a note for the message."""
    try:
        target.unlink()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f" (and the old {target.name} could not be removed: {exc.strerror}; do not upload it)"
    return f" (removed the old {target.name}: it held an earlier version of your files)"


def write_zip(folder, target):
    """Write the two files to ``target`` atomically: no half-written zip on failure."""
    handle, temporary = tempfile.mkstemp(suffix=".zip", dir=target.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for filename in FILES:
                archive.write(folder / filename, arcname=filename)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check attention.py and mha.py and build submission.zip.")
    parser.add_argument("folder", nargs="?", default=Path(__file__).resolve().parent, type=Path,
                        help="folder holding attention.py and mha.py (default: the folder of submit.py)")
    folder = parser.parse_args(argv).folder.resolve()
    target = Path.cwd() / ZIP_NAME
    try:
        if not folder.is_dir():
            raise SubmitError(f"{folder} is not a folder")
        sources = [check_source(folder, filename) for filename in FILES]
        check_imports(folder)
        write_zip(folder, target)
    except SubmitError as exc:
        print(f"submit: {exc}{remove_stale_zip(target)}", file=sys.stderr)
        return 1
    print(f"Wrote {target} with {' and '.join(FILES)}: {UPLOAD}.")
    todo = [name for source, filename in zip(sources, FILES) for name in unfinished(source, filename)]
    core = [name for name in todo if name.split(" ")[0] not in EXTRA_CREDIT]
    extra = [name for name in todo if name.split(" ")[0] in EXTRA_CREDIT]
    if core:
        print(f"Note: still raise NotImplementedError: {', '.join(core)}; run the tests before you upload.")
    if extra:
        print(f"Optional extra credit not written (this costs nothing else): {', '.join(extra)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
