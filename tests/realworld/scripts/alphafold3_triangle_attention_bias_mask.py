# ruff: noqa  (a repro script in nvFuser's format, kept as such scripts are written)
# Modelled on NVIDIA/Fuser tests/python/direct/test_alphafold3.py test_triangle_attention
# (AlphaFold3's triangle attention around the starting node, nvfuser_direct spelling): the
# pair representation z [b, i, j, c_z] projected by four bias-free linears to q, k, v and a
# gate, each reshaped with fd.ops.size values and -1 to [b, i, j, h, c] and permuted to
# [b, i, h, j, c]; a triangle bias linear(z, w_b) permuted and broadcast to
# [b, 1, h, j, k]; the bool pair mask broadcast to [b, i, 1, 1, k]; sdpfa_fwd on 5-D
# tensors with bias= and mask= keywords; the sigmoid gate, the heads merged back and the
# output linear. Sizes as the original's (c_z 128, 4 heads of 32, b 3, 5 tokens).
import torch
from nvfuser_direct import FusionDefinition, DataType


def triangle_attention(fd : FusionDefinition) -> None :
    z_in = fd.define_tensor(shape=[-1, -1, -1, 128], dtype=DataType.BFloat16, contiguity=True)
    w_q = fd.define_tensor(shape=[128, 128], dtype=DataType.BFloat16, contiguity=True)
    w_k = fd.define_tensor(shape=[128, 128], dtype=DataType.BFloat16, contiguity=True)
    w_b = fd.define_tensor(shape=[4, 128], dtype=DataType.BFloat16, contiguity=True)
    mask = fd.define_tensor(shape=[-1, -1, -1], dtype=DataType.Bool, contiguity=True)
    w_v = fd.define_tensor(shape=[128, 128], dtype=DataType.BFloat16, contiguity=True)
    w_g = fd.define_tensor(shape=[128, 128], dtype=DataType.BFloat16, contiguity=True)
    w_o = fd.define_tensor(shape=[128, 128], dtype=DataType.BFloat16, contiguity=True)
    batch_size = fd.ops.size(z_in, 0)
    n_tokens = fd.ops.size(z_in, 1)
    q = fd.ops.linear(z_in, w_q)
    q_h = fd.ops.reshape(q, [batch_size, n_tokens, n_tokens, 4, -1])
    q_h = fd.ops.permute(q_h, [0, 1, 3, 2, 4])
    k = fd.ops.linear(z_in, w_k)
    k_h = fd.ops.reshape(k, [batch_size, n_tokens, n_tokens, 4, -1])
    k_h = fd.ops.permute(k_h, [0, 1, 3, 2, 4])
    b_h = fd.ops.linear(z_in, w_b)
    b_h = fd.ops.permute(b_h, [0, 3, 1, 2])
    b_h = fd.ops.broadcast_in_dim(b_h, shape=[batch_size, 1, 4, n_tokens, n_tokens], broadcast_dims=[0, 2, 3, 4])
    mask = fd.ops.broadcast_in_dim(mask, shape=[batch_size, n_tokens, 1, 1, n_tokens], broadcast_dims=[0, 1, 4])
    v = fd.ops.linear(z_in, w_v)
    v_h = fd.ops.reshape(v, [batch_size, n_tokens, n_tokens, 4, -1])
    v_h = fd.ops.permute(v_h, [0, 1, 3, 2, 4])
    o_h, _, _, _ = fd.ops.sdpfa_fwd(q_h, k_h, v_h, bias=b_h, mask=mask, is_causal=False)
    g = fd.ops.linear(z_in, w_g)
    g = fd.ops.sigmoid(g)
    g_h = fd.ops.reshape(g, [batch_size, n_tokens, n_tokens, 4, -1])
    g_h = fd.ops.permute(g_h, [0, 1, 3, 2, 4])
    o_h = fd.ops.mul(o_h, g_h)
    o_h = fd.ops.cast(o_h, dtype=DataType.BFloat16)
    o = fd.ops.permute(o_h, [0, 1, 3, 2, 4])
    o = fd.ops.reshape(o, [batch_size, n_tokens, n_tokens, -1])
    z_out = fd.ops.linear(o, w_o)
    fd.add_output(z_out)


with FusionDefinition() as fd:
    triangle_attention(fd)

inputs = [
    torch.testing.make_tensor(3, 5, 5, 128, dtype=torch.bfloat16, device="cuda"),
    torch.testing.make_tensor(128, 128, dtype=torch.bfloat16, device="cuda", low=-0.1, high=0.1),
    torch.testing.make_tensor(128, 128, dtype=torch.bfloat16, device="cuda", low=-0.1, high=0.1),
    torch.testing.make_tensor(4, 128, dtype=torch.bfloat16, device="cuda", low=-0.1, high=0.1),
    torch.testing.make_tensor(3, 5, 5, dtype=torch.bool, device="cuda"),
    torch.testing.make_tensor(128, 128, dtype=torch.bfloat16, device="cuda", low=-0.1, high=0.1),
    torch.testing.make_tensor(128, 128, dtype=torch.bfloat16, device="cuda", low=-0.1, high=0.1),
    torch.testing.make_tensor(128, 128, dtype=torch.bfloat16, device="cuda", low=-0.1, high=0.1),
]
fd.execute(inputs)
