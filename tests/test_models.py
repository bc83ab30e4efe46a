"""Policies: output shapes, pixel normalisation inside the model, init, and clear errors."""

import math

import pytest
import torch

from gbx_lightning.models import POLICY_REGISTRY, make_policy

CASES = [
    ("mlp", (6, 11, 11), torch.float32),
    ("cnn", (6, 11, 11), torch.float32),
    ("cnn", (6, 7, 7), torch.float32),
    ("pixel_cnn", (1, 72, 80), torch.uint8),
    ("pixel_cnn", (4, 72, 80), torch.uint8),
    ("nature_cnn", (4, 72, 80), torch.uint8),
    ("impala_cnn", (4, 72, 80), torch.uint8),
    ("impala_cnn", (1, 72, 80), torch.uint8),
]


def _obs(shape, dtype, n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 4, (n, *shape), generator=g, dtype=torch.uint8)
    return torch.rand((n, *shape), generator=g)


@pytest.mark.parametrize("name,shape,dtype", CASES)
def test_output_shapes_and_near_uniform_initial_policy(name, shape, dtype):
    torch.manual_seed(0)
    policy = make_policy(name, shape, 8)
    logits, value = policy(_obs(shape, dtype))
    assert logits.shape == (5, 8) and logits.dtype == torch.float32
    assert value.shape == (5,)
    # policy head gain 0.01: the initial policy is close to uniform, entropy ~ log(8)
    entropy = -(logits.log_softmax(-1).exp() * logits.log_softmax(-1)).sum(-1)
    assert torch.all(entropy > math.log(8) - 0.01)


@pytest.mark.parametrize("name", ["pixel_cnn", "nature_cnn", "impala_cnn"])
def test_pixel_policies_divide_shades_by_three(name):
    policy = make_policy(name, (4, 72, 80), 6)
    seen = []
    first_conv = next(m for m in policy.modules() if isinstance(m, torch.nn.Conv2d))
    first_conv.register_forward_hook(lambda mod, inp, out: seen.append(inp[0]))
    obs = _obs((4, 72, 80), torch.uint8, n=2)
    obs[0, 0, 0, 0] = 3
    obs[1, 0, 0, 0] = 0
    policy(obs)
    assert seen[0].dtype == torch.float32
    torch.testing.assert_close(seen[0], obs.float() / 3)
    assert seen[0].max().item() == 1.0 and seen[0].min().item() == 0.0


def test_pixel_policy_rejects_float_obs_and_wrong_shape():
    policy = make_policy("nature_cnn", (4, 72, 80), 6)
    with pytest.raises(ValueError, match="dtype torch.uint8"):
        policy(torch.zeros(2, 4, 72, 80))
    with pytest.raises(ValueError, match=r"shape \[N, 4, 72, 80\].*\[2, 3, 72, 80\]"):
        policy(torch.zeros(2, 3, 72, 80, dtype=torch.uint8))


def test_unknown_policy_name_lists_known_ones():
    with pytest.raises(ValueError, match="unknown policy 'resnet'.*cnn.*impala_cnn.*mlp.*nature_cnn.*pixel_cnn"):
        make_policy("resnet", (6, 11, 11), 8)
    assert set(POLICY_REGISTRY) == {"mlp", "cnn", "pixel_cnn", "nature_cnn", "impala_cnn", "pixel_lstm", "mlp_lstm"}


def test_pixel_policy_rejects_tiny_frames():
    with pytest.raises(ValueError, match=r"nature_cnn policy: obs_shape must be \[K, H, W\].*got \[4, 8, 8\]"):
        make_policy("nature_cnn", (4, 8, 8), 6)


def test_orthogonal_init_of_heads():
    torch.manual_seed(1)
    policy = make_policy("mlp", (10,), 4, hidden=[16])
    w = policy.policy_head.weight  # [4, 16], orthogonal rows scaled by 0.01
    torch.testing.assert_close(w @ w.T, 1e-4 * torch.eye(4), atol=1e-9, rtol=1e-5)
    assert torch.all(policy.value_head.bias == 0)


def _policy_for_layout(name: str, k: int, **kwargs):
    """make_policy's, or a PixelVectorPolicy (its LSTM form) whose first channel is a data plane of 12 bytes."""
    from gbx_lightning.models import PixelVectorLSTMPolicy, PixelVectorPolicy
    vector = {"pixel_vector": PixelVectorPolicy, "pixel_vector_lstm": PixelVectorLSTMPolicy}.get(name)
    if vector is not None:
        return vector((k, 72, 80), 5, vector_size=12, vector_bits=True, **kwargs)
    return make_policy(name, (k, 72, 80), 5, **kwargs)


@pytest.mark.parametrize("name,k", [("pixel_cnn", 1), ("nature_cnn", 4), ("impala_cnn", 2), ("pixel_lstm", 4),
                                    ("pixel_vector", 3), ("pixel_vector_lstm", 3)])
def test_channels_last_is_the_same_model_in_another_memory_layout(name, k):
    """Same seed, same weights (values), NHWC convolution weights; outputs and gradients equal up to rounding, and
    a checkpoint of one loads into the other (the pixel-vector policies: the frames behind the data plane)."""
    obs = torch.randint(0, 4, (6, k, 72, 80), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    actions = torch.arange(6) % 5
    outs, grads = [], []
    for channels_last in (False, True):
        torch.manual_seed(0)
        policy = _policy_for_layout(name, k, channels_last=channels_last)
        conv = [m for m in policy.modules() if isinstance(m, torch.nn.Conv2d)][-1]   # more than 1 channel in
        assert conv.weight.is_contiguous(memory_format=torch.channels_last) == channels_last
        if name.endswith("lstm"):
            logits, value, _ = policy.step(obs, policy.initial_state(6))
            logp = torch.log_softmax(logits, -1)[torch.arange(6), actions]
        else:
            logp, _, value = policy.evaluate(obs, actions)
        (logp.sum() + value.sum()).backward()
        outs.append((logp.detach(), value.detach()))
        grads.append(conv.weight.grad.contiguous())
        if channels_last:
            torch.manual_seed(5)
            other = _policy_for_layout(name, k)
            other.load_state_dict(policy.state_dict())
            torch.testing.assert_close(other.state_dict(), policy.state_dict())
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-4, atol=1e-5)


def test_compile_update_is_the_eager_update_and_repeats_itself_bit_for_bit():
    """compile_update runs evaluate through torch.compile: the same log-probs, entropies, values and gradients as
    eager up to rounding; and two compiled policies from one seed trained on the same batches end bit-identical
    (what an exact resume needs: the resumed process compiles the same code). Acting (forward) stays eager."""
    obs = torch.randint(0, 4, (3, 8, 2, 72, 80), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    actions = torch.randint(0, 5, (3, 8), generator=torch.Generator().manual_seed(2))

    def train(compile_update):
        torch.manual_seed(0)
        policy = make_policy("pixel_cnn", (2, 72, 80), 5, compile_update=compile_update)
        opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
        first = None
        for b in range(3):
            logp, entropy, value = policy.evaluate(obs[b], actions[b])
            (-logp.mean() - 0.01 * entropy.mean() + value.pow(2).mean()).backward()
            if first is None:
                first = (logp.detach(), entropy.detach(), value.detach(),
                         [p.grad.clone() for p in policy.parameters()])
            opt.step()
            opt.zero_grad()
        return policy, first

    eager, eager_first = train(False)
    compiled, compiled_first = train(True)
    again, _ = train(True)
    assert eager._compiled_evaluate is None and compiled._compiled_evaluate is not None
    torch.testing.assert_close(compiled_first, eager_first, rtol=1e-4, atol=1e-5)
    for a, b in zip(compiled.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    torch.testing.assert_close(compiled.state_dict(), eager.state_dict(), rtol=1e-3, atol=1e-4)



@pytest.mark.parametrize("name,channels_last", [("pixel_cnn", True), ("pixel_cnn", False), ("pixel_lstm", True)])
def test_reused_input_memory_gives_what_fresh_memory_gives(name, channels_last):
    """The float pixels go into memory kept from the previous call (gbx_lightning/heap.py, ReusedTensors): batches of
    other sizes give outputs and gradients bit for bit equal to a copy of the policy that has never run (its memory starts empty: copies do not share it), acting between them (no_grad) changes nothing, and the memory is reused, not reallocated."""
    import copy
    torch.manual_seed(0)
    policy = make_policy(name, (4, 72, 80), 5, channels_last=channels_last)
    gen = torch.Generator().manual_seed(3)
    for n in (7, 3, 7, 12):
        obs = torch.randint(0, 4, (n, 4, 72, 80), dtype=torch.uint8, generator=gen)
        fresh = copy.deepcopy(policy)
        assert not fresh._inputs._flat
        with torch.no_grad():
            acted = (policy.step(obs, policy.initial_state(n))[:2] if name == "pixel_lstm" else policy(obs))
        results = []
        for p in (policy, fresh):
            p.zero_grad()
            out = p.step(obs, p.initial_state(n))[:2] if name == "pixel_lstm" else p(obs)
            (out[0].square().sum() + out[1].sum()).backward()
            results.append((out[0].detach(), out[1].detach(), p.convs[0].weight.grad.clone()))
        for a, b in zip(*results):
            assert torch.equal(a, b)
        torch.testing.assert_close(acted[0], results[0][0], rtol=0, atol=1e-6)   # the LSTM's kernels differ
    flat = dict(policy._inputs._flat)
    policy.torso(obs[:5])
    assert all(policy._inputs._flat[k] is flat[k] for k in flat)   # 5 <= 12 rows: the same memory


def test_reused_input_memory_written_under_a_live_graph_fails_its_backward():
    """Two forwards with gradient and then the first one's backward: the second wrote the memory the first graph
    holds, and autograd says so (the version counter), rather than computing gradients from the second batch."""
    policy = make_policy("pixel_cnn", (4, 72, 80), 5, channels_last=True)
    obs = torch.randint(0, 4, (2, 4, 8 * 9, 80), dtype=torch.uint8)
    first = policy(obs)[1].sum()
    policy(obs.flip(0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        first.backward()
