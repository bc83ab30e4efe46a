"""Hand-computed checks of the RL losses (gbx_lightning.rl). The arithmetic is written out in comments."""

import math

import pytest
import torch

from gbx_lightning.models import logprob_entropy
from gbx_lightning.rl import a2c_td0, explained_variance, gae, ppo_loss

LN = math.log


# ---------------------------------------------------------------- logprob_entropy (the policy's categorical math)
def test_logprob_entropy_hand_computed():
    # row0: logits [0, 0] -> pi = [0.5, 0.5], action 1; row1: logits [ln 3, 0] -> pi = [0.75, 0.25], action 0
    logp, ent = logprob_entropy(torch.tensor([[0.0, 0.0], [LN(3.0), 0.0]]), torch.tensor([1, 0]))
    torch.testing.assert_close(logp, torch.tensor([LN(0.5), LN(0.75)]))
    torch.testing.assert_close(ent, torch.tensor([LN(2.0), -(0.75 * LN(0.75) + 0.25 * LN(0.25))]))


# ---------------------------------------------------------------- a2c_td0
def _a2c_case():
    # env0: logits [0, 0]     -> pi = [0.5, 0.5]; action 1 -> log pi = ln 0.5
    # env1: logits [ln 3, 0]  -> pi = [0.75, 0.25]; action 0 -> log pi = ln 0.75
    logits = torch.tensor([[0.0, 0.0], [LN(3.0), 0.0]], requires_grad=True)
    logprobs, entropy = logprob_entropy(logits, torch.tensor([1, 0]))
    values = torch.tensor([1.0, 2.0], requires_grad=True)
    next_values = torch.tensor([2.0, 5.0], requires_grad=True)
    return dict(
        logprobs=logprobs,
        entropy=entropy,
        values=values,
        rewards=torch.tensor([1.0, -1.0]),
        next_values=next_values,
        terminated=torch.tensor([False, True]),
        gamma=0.5,
    ), logits


def test_a2c_td0_hand_computed():
    case, _ = _a2c_case()
    out = a2c_td0(**case)
    # targets: env0 (not terminated, bootstraps): 1 + 0.5*2 = 2 ; env1 (terminated): -1 + 0 = -1
    # advantages: 2 - 1 = 1 ; -1 - 2 = -3
    policy = -(1.0 * LN(0.5) + (-3.0) * LN(0.75)) / 2
    value = (0.5 * 1.0**2 + 0.5 * 3.0**2) / 2  # = 2.5
    entropy = (LN(2.0) + -(0.75 * LN(0.75) + 0.25 * LN(0.25))) / 2
    assert out["policy_loss"].item() == pytest.approx(policy, abs=1e-6)
    assert out["value_loss"].item() == pytest.approx(2.5)
    assert value == 2.5
    assert out["entropy"].item() == pytest.approx(entropy, abs=1e-6)
    assert out["loss"].item() == pytest.approx(policy + 0.5 * 2.5 - 0.01 * entropy, abs=1e-6)
    assert out["advantage_mean"].item() == pytest.approx((1.0 - 3.0) / 2)
    assert out["value_mean"].item() == pytest.approx(1.5)
    # targets [2, -1] (mean 0.5, population variance 2.25), errors [1, -3] (mean -1, variance 4): 1 - 4/2.25
    assert out["explained_variance"].item() == pytest.approx(1 - 4 / 2.25)


def test_a2c_td0_gradients():
    case, logits = _a2c_case()
    out = a2c_td0(**case, value_coef=0.5, entropy_coef=0.0)
    out["loss"].backward()
    # V(s') is a constant of the target: no gradient reaches next_values.
    assert case["next_values"].grad is None
    # d policy / d logits_i = -(A_i / N) * (onehot(a_i) - pi_i)
    #   env0: -(1/2) * ([0, 1] - [0.5, 0.5])      = [ 0.25,  -0.25]
    #   env1: -(-3/2) * ([1, 0] - [0.75, 0.25])   = [ 0.375, -0.375]
    torch.testing.assert_close(logits.grad, torch.tensor([[0.25, -0.25], [0.375, -0.375]]))
    # d (0.5 * mean 0.5 (t - v)^2) / d v_i = -0.5 * (t_i - v_i) / N: env0 -0.5*1/2, env1 -0.5*(-3)/2
    # (the advantage in the policy term is detached, so it adds nothing here)
    torch.testing.assert_close(case["values"].grad, torch.tensor([-0.25, 0.75]))
    # only `loss` is attached
    assert not out["policy_loss"].requires_grad and not out["value_loss"].requires_grad


def test_a2c_td0_truncation_bootstraps():
    # Same transition, terminated=False (a truncated env is not terminated): target = r + gamma * V(s').
    kw = dict(logprobs=torch.tensor([-LN(3.0)]), entropy=torch.tensor([LN(3.0)]), values=torch.tensor([0.0]),
              rewards=torch.tensor([1.0]), next_values=torch.tensor([4.0]), gamma=0.5)
    boot = a2c_td0(**kw, terminated=torch.tensor([False]))
    cut = a2c_td0(**kw, terminated=torch.tensor([True]))
    assert boot["value_loss"].item() == pytest.approx(0.5 * (1.0 + 0.5 * 4.0) ** 2)  # 4.5
    assert cut["value_loss"].item() == pytest.approx(0.5 * 1.0**2)


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(rewards=torch.zeros(2, 1)), "a2c_td0: rewards must have shape [B]=[2], got [2, 1]"),
        (dict(values=torch.zeros(3)), "a2c_td0: values must have shape [B]=[2], got [3]"),
        (dict(terminated=torch.zeros(2)), "a2c_td0: terminated must have dtype torch.bool, got torch.float32"),
        (dict(next_values=torch.zeros(2, dtype=torch.int64)), "a2c_td0: next_values must have a floating point dtype"),
        (dict(logprobs=torch.zeros(2, 3)), "a2c_td0: logprobs must be a tensor of shape [B], got [2, 3]"),
        (dict(gamma=1.5), "a2c_td0: gamma must be a number in [0, 1], got 1.5"),
        (dict(entropy_coef=-1.0), "a2c_td0: entropy_coef must be a number >= 0, got -1.0"),
        (dict(rewards=[0.0, 0.0]), "a2c_td0: rewards must be a torch.Tensor, got list"),
    ],
)
def test_a2c_td0_rejects_bad_input(override, message):
    case, _ = _a2c_case()
    case.update(override)
    with pytest.raises((ValueError, TypeError)) as err:
        a2c_td0(**case)
    assert message in str(err.value)


# ---------------------------------------------------------------- explained_variance
def test_explained_variance_hand_computed():
    returns = torch.tensor([1.0, 2.0, 3.0, 4.0])  # population variance 1.25
    assert explained_variance(returns, returns).item() == 1.0  # perfect predictions
    assert explained_variance(torch.full((4,), 2.5), returns).item() == pytest.approx(0.0)  # the mean: explains nothing
    # errors [1, 0, 0, -1]: variance 0.5 -> 1 - 0.5 / 1.25 = 0.6
    assert explained_variance(torch.tensor([0.0, 2.0, 3.0, 5.0]), returns).item() == pytest.approx(0.6)
    assert math.isnan(explained_variance(torch.zeros(3), torch.ones(3)).item())  # constant returns: undefined


# ---------------------------------------------------------------- gae
def _gae_case():
    # T=3, three envs sharing values v=[1,2,3] and rewards r=[1,0,2]; gamma = lam = 0.5 (gamma*lam = 0.25)
    #   env0: no episode end.            next_values = [2, 3, 4]
    #   env1: terminated at t=1.         next_values = [2, 9, 4]  (the 9 must be ignored)
    #   env2: truncated at t=1.          next_values = [2, 9, 4]  (the 9 = V(final_obs) is used, trace cut)
    v = torch.tensor([[1.0, 1, 1], [2, 2, 2], [3, 3, 3]])
    r = torch.tensor([[1.0, 1, 1], [0, 0, 0], [2, 2, 2]])
    nv = torch.tensor([[2.0, 2, 2], [3, 9, 9], [4, 4, 4]])
    term = torch.tensor([[False, False, False], [False, True, False], [False, False, False]])
    trunc = torch.tensor([[False, False, False], [False, False, True], [False, False, False]])
    return r, v, nv, term, trunc


def test_gae_hand_computed_termination_and_truncation():
    r, v, nv, term, trunc = _gae_case()
    adv, ret = gae(r, v, nv, term, trunc, gamma=0.5, lam=0.5)
    # env0: delta = [1 + .5*2 - 1, 0 + .5*3 - 2, 2 + .5*4 - 3] = [1, -0.5, 1]
    #       A2 = 1, A1 = -0.5 + .25*1 = -0.25, A0 = 1 + .25*(-0.25) = 0.9375
    # env1: delta1 = 0 + 0 - 2 = -2 (no bootstrap); A2 = 1, A1 = -2 (trace cut), A0 = 1 + .25*(-2) = 0.5
    # env2: delta1 = 0 + .5*9 - 2 = 2.5 (bootstraps); A2 = 1, A1 = 2.5 (trace cut), A0 = 1 + .25*2.5 = 1.625
    expected = torch.tensor([[0.9375, 0.5, 1.625], [-0.25, -2.0, 2.5], [1.0, 1.0, 1.0]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(ret, expected + v)


def test_gae_lambda_zero_is_td_error():
    r, v, nv, term, trunc = _gae_case()
    adv, _ = gae(r, v, nv, term, trunc, gamma=0.5, lam=0.0)
    # A_t = delta_t: env0 [1, -0.5, 1], env1 [1, -2, 1], env2 [1, 2.5, 1]
    torch.testing.assert_close(adv, torch.tensor([[1.0, 1.0, 1.0], [-0.5, -2.0, 2.5], [1.0, 1.0, 1.0]]))


def test_gae_lambda_one_is_bootstrapped_monte_carlo_return():
    # With lam=1 and no episode end, A_t = sum_k gamma^k r_{t+k} + gamma^(T-t) V(s_T) - v_t (the deltas telescope
    # because next_values[t] = values[t+1]).
    g = torch.Generator().manual_seed(0)
    T, N, gamma = 5, 4, 0.9
    v_all = torch.randn(T + 1, N, generator=g, dtype=torch.float64)
    r = torch.randn(T, N, generator=g, dtype=torch.float64)
    none = torch.zeros(T, N, dtype=torch.bool)
    adv, ret = gae(r, v_all[:-1], v_all[1:], none, none, gamma=gamma, lam=1.0)
    for t in range(T):
        mc = sum(gamma**k * r[t + k] for k in range(T - t)) + gamma ** (T - t) * v_all[T]
        torch.testing.assert_close(ret[t], mc)
        torch.testing.assert_close(adv[t], mc - v_all[t])


def test_gae_matches_scalar_reference_with_random_ends():
    g = torch.Generator().manual_seed(1)
    T, N, gamma, lam = 7, 5, 0.97, 0.8
    r, v, nv = (torch.randn(T, N, generator=g) for _ in range(3))
    term = torch.rand(T, N, generator=g) < 0.2
    trunc = (torch.rand(T, N, generator=g) < 0.2) & ~term
    adv, _ = gae(r, v, nv, term, trunc, gamma=gamma, lam=lam)
    for n in range(N):  # plain per-env loop, one step at a time
        a = 0.0
        for t in reversed(range(T)):
            boot = 0.0 if term[t, n] else gamma * nv[t, n].item()
            carry = 0.0 if (term[t, n] or trunc[t, n]) else gamma * lam * a
            a = r[t, n].item() + boot - v[t, n].item() + carry
            assert adv[t, n].item() == pytest.approx(a, abs=1e-5)


def test_gae_outputs_are_detached():
    r, v, nv, term, trunc = _gae_case()
    v.requires_grad_(True)
    adv, ret = gae(r, v, nv, term, trunc, gamma=0.5, lam=0.5)
    assert not adv.requires_grad and not ret.requires_grad


@pytest.mark.parametrize(
    "index, bad, message",
    [
        (0, torch.zeros(3), "gae: rewards must be a tensor of shape [T, N], got [3]"),
        (2, torch.zeros(3, 2), "gae: next_values must have shape [T, N]=[3, 3], got [3, 2]"),
        (4, torch.zeros(3, 3), "gae: truncated must have dtype torch.bool, got torch.float32"),
    ],
)
def test_gae_rejects_bad_input(index, bad, message):
    args = list(_gae_case())
    args[index] = bad
    with pytest.raises((ValueError, TypeError)) as err:
        gae(*args, gamma=0.5, lam=0.5)
    assert message in str(err.value)


def test_gae_rejects_bad_lambda():
    with pytest.raises(ValueError, match=r"gae: lam must be a number in \[0, 1\], got -0.1"):
        gae(*_gae_case(), gamma=0.5, lam=-0.1)


# ---------------------------------------------------------------- ppo_loss
def _ppo_case():
    return dict(
        new_logprobs=torch.tensor([LN(1.5), LN(0.5)], requires_grad=True),  # ratio = [1.5, 0.5]
        old_logprobs=torch.tensor([0.0, 0.0]),
        advantages=torch.tensor([3.0, 1.0]),  # mean 2, population std 1 -> normalised [1, -1]
        new_values=torch.tensor([1.0, 2.0], requires_grad=True),
        old_values=torch.tensor([0.0, 2.5]),
        returns=torch.tensor([2.0, 0.0]),
        entropy=torch.tensor([0.5, 1.0]),
    )


def test_ppo_loss_hand_computed():
    out = ppo_loss(**_ppo_case())
    # sample0: A=+1, ratio 1.5: max(-1.5, -1.2) = -1.2 ; sample1: A=-1, ratio 0.5: max(0.5, 0.8) = 0.8
    policy = (-1.2 + 0.8) / 2  # -0.2
    value = 0.5 * ((1 - 2) ** 2 + (2 - 0) ** 2) / 2  # 1.25
    entropy = 0.75
    assert out["policy_loss"].item() == pytest.approx(policy, abs=1e-6)
    assert out["value_loss"].item() == pytest.approx(value)
    assert out["entropy"].item() == pytest.approx(entropy)
    assert out["loss"].item() == pytest.approx(policy + 0.5 * value - 0.01 * entropy, abs=1e-6)
    # approx_kl = mean((r - 1) - ln r) = ((0.5 - ln 1.5) + (-0.5 - ln 0.5)) / 2
    assert out["approx_kl"].item() == pytest.approx(((0.5 - LN(1.5)) + (-0.5 - LN(0.5))) / 2, abs=1e-6)
    assert out["clipfrac"].item() == 1.0  # |0.5| > 0.2 and |-0.5| > 0.2


def test_ppo_loss_without_advantage_normalisation():
    case = _ppo_case()
    case["advantages"] = torch.tensor([1.0, -1.0]) * 2  # raw A = [2, -2]
    out = ppo_loss(**case, normalize_advantages=False)
    # sample0: max(-2*1.5, -2*1.2) = -2.4 ; sample1: max(2*0.5, 2*0.8) = 1.6
    assert out["policy_loss"].item() == pytest.approx((-2.4 + 1.6) / 2, abs=1e-6)


def test_ppo_loss_value_clipping():
    out = ppo_loss(**_ppo_case(), value_clip=0.5)
    # sample0: V_old + clip(1 - 0, -.5, .5) = 0.5 -> (0.5 - 2)^2 = 2.25 > (1 - 2)^2 = 1  -> 2.25
    # sample1: 2.5 + clip(2 - 2.5, -.5, .5) = 2.0 -> (2 - 0)^2 = 4 = unclipped 4          -> 4
    assert out["value_loss"].item() == pytest.approx(0.5 * (2.25 + 4.0) / 2)


def test_ppo_loss_gradients_follow_the_clip():
    # ratios [1.5, 1.1, 1.5], A [+1, -1, -1], no normalisation, B = 3:
    #   s0: max(-1.5, -1.2) = clipped -1.2         -> no gradient
    #   s1: max(1.1, 1.1)  = unclipped (inside)    -> d/d logp = -A * ratio / B = 1.1 / 3
    #   s2: max(1.5, 1.2)  = unclipped (pessimistic side) -> 1.5 / 3
    new_lp = torch.tensor([LN(1.5), LN(1.1), LN(1.5)], requires_grad=True)
    old_lp = torch.zeros(3, requires_grad=True)
    z = torch.zeros(3)
    out = ppo_loss(new_lp, old_lp, torch.tensor([1.0, -1.0, -1.0]), z, z, z, z, normalize_advantages=False)
    out["loss"].backward()
    torch.testing.assert_close(new_lp.grad, torch.tensor([0.0, 1.1 / 3, 1.5 / 3]))
    assert old_lp.grad is None  # rollout data is a constant
    assert out["clipfrac"].item() == pytest.approx(2 / 3)


def test_ppo_loss_normalisation_defined_for_single_sample():
    one = torch.tensor([0.3])
    out = ppo_loss(one, one, torch.tensor([5.0]), one, one, one, one)
    assert torch.isfinite(out["loss"]) and out["policy_loss"].item() == 0.0  # normalised A = 0


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(returns=torch.zeros(3)), "ppo_loss: returns must have shape [B]=[2], got [3]"),
        (dict(entropy=torch.zeros(2, dtype=torch.int32)), "ppo_loss: entropy must have a floating point dtype"),
        (dict(new_logprobs=torch.zeros(2, 1)), "ppo_loss: new_logprobs must be a tensor of shape [B], got [2, 1]"),
        (dict(clip_coef=0.0), "ppo_loss: clip_coef must be a number > 0, got 0.0"),
        (dict(value_clip=-1.0), "ppo_loss: value_clip must be a number > 0 or None, got -1.0"),
    ],
)
def test_ppo_loss_rejects_bad_input(override, message):
    case = _ppo_case()
    case.update(override)
    with pytest.raises((ValueError, TypeError)) as err:
        ppo_loss(**case)
    assert message in str(err.value)
