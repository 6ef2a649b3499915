"""The catalogued score functions as the tests build them, each with its float64 reference: the one table that
tests/test_catalog_scores.py (what every function must do) and each function's own test file (what its formula
alone does) read.

Each reference is the paper's formula written row by row in float64, at the state the shared tests use (the
learned per-head parameters, where a function has them, set to values of both signs, layer 1's row).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnlab.training.attention import score_class
from attnlab.training.attention.slay import laguerre_rule
from attnlab.training.attention.softpick import SOFTPICK_EPS
from attnlab.training.attention.spherical_yat import SPHERICAL_EPS
from score_reference import DHEAD, HEADS, LAYERS, logits64

BLOCK_SIZE = 16  # the module's window; inputs are shorter (score_reference.LENGTH)
SINKS = [[-2.0, 0.0, 1.5, 4.0], [0.5, -1.0, 3.0, -6.0]]  # (layers, heads): both signs, large and small
SCALES = [[0.2, 0.5, 1.0, -0.3], [0.05, 2.0, 0.7, 0.0]]  # (layers, heads)


def make(variant: str, block_size: int = BLOCK_SIZE, **learned) -> nnx.Module:
    """The score module of `variant`, each named learned parameter set to the (layers, heads) values given."""
    score = score_class(variant)(layers=LAYERS, heads=HEADS, d_head=DHEAD, block_size=block_size, rngs=nnx.Rngs(0))
    for name, values in learned.items():
        if values is not None:
            getattr(score, name)[...] = jnp.asarray(values, jnp.float32)
    return score


def _rows(s: np.ndarray, row_weights: Callable[[np.ndarray, int], np.ndarray]) -> np.ndarray:
    """Weights over keys 0..i of each query i from its row of scores; future keys 0."""
    w = np.zeros_like(s)
    for i in range(s.shape[2]):
        w[:, :, i, : i + 1] = row_weights(s[:, :, i, : i + 1], i)
    return w


def _softmax(row: np.ndarray) -> np.ndarray:
    e = np.exp(row - row.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def cog_weights(q, k):
    """sign(s_ij) exp(|s_ij|) / sum_j' exp(|s_ij'|)."""
    def row(r, _):
        e = np.exp(np.abs(r) - np.abs(r).max(-1, keepdims=True))
        return np.sign(r) * e / e.sum(-1, keepdims=True)

    return _rows(logits64(q, k), row)


def softpick_weights(q, k):
    """ReLU(e^{s_ij} - 1) / (sum_j' |e^{s_ij'} - 1| + eps), as the paper writes it (no shift: float64 holds these
    scores)."""
    def row(r, _):
        e = np.exp(r) - 1.0
        return np.maximum(e, 0.0) / (np.abs(e).sum(-1, keepdims=True) + SOFTPICK_EPS)

    return _rows(logits64(q, k), row)


def stickbreaking_weights(q, k):
    """Key by key: each earlier key's β = sigmoid(s) times what the keys between it and the query left."""
    beta = 1.0 / (1.0 + np.exp(-logits64(q, k)))
    w = np.zeros_like(beta)
    for i in range(beta.shape[2]):
        left = np.ones(beta.shape[:2])
        for j in range(i - 1, -1, -1):  # the most recent key breaks the stick first
            w[:, :, i, j] = beta[:, :, i, j] * left
            left = left * (1.0 - beta[:, :, i, j])
    return w


def selective_penalty(s):
    """F_ij = Σ_{k=j+1}^{i-1} max(0, s_0kj) for j >= 1, (B, T, S)."""
    f = np.zeros((s.shape[0], s.shape[2], s.shape[3]))
    for i in range(s.shape[2]):
        for j in range(1, i):
            f[:, i, j] = sum(np.maximum(s[:, 0, kq, j], 0.0) for kq in range(j + 1, i))
    return f


def selective_weights(q, k):
    """softmax over keys 0..i of s_ij - F_ij."""
    s = logits64(q, k)
    return _rows(s - selective_penalty(s)[:, None], lambda r, _: _softmax(r))


def sink_weights(q, k, sink):
    """exp(s_ij) / (exp(b_h) + sum over j' <= i of exp(s_ij'))."""
    sink = np.asarray(sink, np.float64)[None, :, None]

    def row(r, _):
        top = np.maximum(r.max(-1, keepdims=True), sink)
        e = np.exp(r - top)
        return e / (np.exp(sink - top) + e.sum(-1, keepdims=True))

    return _rows(logits64(q, k), row)


def ssmax_weights(q, k, scales):
    """Row i: softmax over keys 0..i of (s_h log(i + 1)) times the logits."""
    scales = np.asarray(scales, np.float64)[None, :, None]
    return _rows(logits64(q, k), lambda r, i: _softmax(scales * math.log(i + 1) * r))


def sigmoid_weights(q, k, block_size=BLOCK_SIZE):
    """sigmoid(s_ij - log(block_size)) on visible keys, rows not normalised."""
    return _rows(logits64(q, k), lambda r, _: 1.0 / (1.0 + np.exp(-(r - math.log(block_size)))))


def _kernel_rows(kappa: np.ndarray) -> np.ndarray:
    """kappa / (sum of the row's visible kappa + 1e-9) over keys 0..i: yat's normaliser."""
    return _rows(kappa, lambda r, _: r / (r.sum(-1, keepdims=True) + 1e-9))


def _unit64(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-6)


def spherical_yat_weights(q, k):
    """x^2 / (2 + eps - 2x), x the cosine of query and key, row by row over the causal window."""
    x = np.einsum("bthd,bshd->bhts", _unit64(q), _unit64(k))
    return _kernel_rows(x ** 2 / np.maximum(2.0 + SPHERICAL_EPS - 2.0 * x, SPHERICAL_EPS))


def slay_features64(u, layer: int, score) -> np.ndarray:
    """phi(u) in float64, written out term by term over (node r, anchor p, feature m) from the module's arrays."""
    u = _unit64(u)
    anchors = np.asarray(score.anchors[...][layer], np.float64)  # (P, d)
    omega = np.asarray(score.omega[...][layer], np.float64)  # (R, H, d, M)
    nodes, weights = laguerre_rule(len(score.nodes))
    batch, length, heads, _ = u.shape
    p_count, m_count = anchors.shape[0], omega.shape[-1]
    phi = np.zeros((batch, length, heads, len(nodes), p_count, m_count))
    for r, (s, w) in enumerate(zip(nodes, weights)):
        for p in range(p_count):
            poly = (u @ anchors[p]) ** 2 / math.sqrt(p_count)  # (B, T, H)
            for m in range(m_count):
                proj = np.einsum("bthd,hd->bth", u, omega[r, :, :, m])
                prf = np.exp(np.clip(math.sqrt(2 * s) * proj - s, -10.0, 10.0)) / math.sqrt(m_count)
                phi[..., r, p, m] = math.sqrt(w) * poly * prf
    return phi.reshape(batch, length, heads, -1)


def slay_weights(q, k):
    """phi(q).phi(k) over the causal window, normalised as yat's kernel is."""
    score = make("slay")
    return _kernel_rows(np.einsum("bthf,bshf->bhts", slay_features64(q, 1, score), slay_features64(k, 1, score)))


def fox_weights(q, k, score):
    """Row i: softmax over keys 0..i of s_ij + Σ_{l=j+1}^{i} log σ(w_h · k̄_l + b_h), layer 1's gate, each gate
    written out key by key in float64."""
    weight = np.asarray(score.forget_weight[...][1], np.float64)  # (H·D, H)
    bias = np.asarray(score.forget_bias[...][1], np.float64)
    k64 = np.asarray(k, np.float64)
    gate = np.einsum("bsf,fh->bhs", k64.reshape(k64.shape[0], k64.shape[1], -1), weight) + bias[None, :, None]
    log_f = -np.log1p(np.exp(-gate))  # log σ
    s = logits64(q, k)
    forget = np.zeros_like(s)
    for i in range(s.shape[2]):
        for j in range(i):
            forget[:, :, i, j] = log_f[:, :, j + 1: i + 1].sum(-1)
    return _rows(s + forget, lambda r, _: _softmax(r))


def diff_output(q, k, v, score, layer: int = 1):
    """Differential attention's head outputs in float64, written out per differential head as the paper states
    them: the pair's two softmax maps (query heads 2i and 2i+1), λ from its four vectors and λ_init, the
    difference applied to the pair's 2d-wide values, RMS-normalised, scaled, and times 1 − λ_init."""
    s = logits64(q, k)
    maps = _rows(s, lambda r, _: _softmax(r))  # (B, H, T, S)
    q1, k1, q2, k2 = np.asarray(score.lambda_vectors[...][layer], np.float64)
    init = 0.8 - 0.6 * math.exp(-0.3 * layer)
    lam = math.exp(q1 @ k1) - math.exp(q2 @ k2) + init
    scale = np.asarray(score.norm_scale[...][layer], np.float64)
    v64 = np.asarray(v, np.float64)
    batch, length, heads, width = v64.shape
    out = np.zeros((batch, length, heads, width))
    for i in range(heads // 2):
        values = np.concatenate([v64[:, :, 2 * i], v64[:, :, 2 * i + 1]], axis=-1)  # (B, S, 2d)
        a = maps[:, 2 * i] - lam * maps[:, 2 * i + 1]  # (B, T, S)
        head = np.einsum("bts,bse->bte", a, values)
        head = head / np.sqrt((head**2).mean(-1, keepdims=True) + 1e-5) * scale * (1.0 - init)
        out[:, :, 2 * i], out[:, :, 2 * i + 1] = head[..., :width], head[..., width:]
    return out


LAMBDA_VECTORS = [[[0.3, -0.2, 0.1, 0.4, -0.1, 0.2, 0.0, 0.5]] * 4, [[-0.4, 0.3, 0.2, -0.1, 0.6, -0.3, 0.1, 0.2],
                                                                     [0.5, 0.1, -0.2, 0.3, 0.2, 0.4, -0.5, 0.1],
                                                                     [0.2, -0.6, 0.3, 0.1, -0.2, 0.5, 0.4, -0.3],
                                                                     [-0.1, 0.2, 0.5, -0.4, 0.3, 0.1, 0.2, 0.6]]]
NORM_SCALES = [[1.0] * 16, [0.5, 1.5, -0.7, 2.0] * 4]  # (layers, 2d): layer 1 off its start, both signs


@dataclasses.dataclass(frozen=True)
class Reference:
    """A catalogued score function as the shared tests use it: built at a state worth testing, its float64
    weights at layer 1 of that state, and the per-(layer, head) parameter it learns (None: it learns none) with
    that parameter's initial value at a config's model section, and how many parameters it learns per layer and
    head in all (`per_head`: one, unless a head learns a vector). `plain_telemetry`: its score telemetry is the
    logit itself and its rows' magnitudes renormalised, with no row mass and no gate. `row_mass`: a kernel
    normalised by its row mass, which the telemetry reports (and reads the mass AUROC of)."""

    variant: str
    build: Callable[[], nnx.Module]
    weights: Callable[[object, object], np.ndarray]
    learned: str | None = None
    initial: Callable[[dict], float] | None = None
    plain_telemetry: bool = False
    row_mass: bool = False
    per_head: Callable[[dict], int] = lambda model: 1  # parameters it learns per layer and head, at a model section
    # its float64 head outputs (q, k, v) -> (B,T,H,D) where its step after the weights is its own (differential
    # attention), else None: its weights applied to the values
    own_output: Callable[[object, object, object], np.ndarray] | None = None
    extra: Callable[[dict], int] | None = None  # its parameters beyond softmax in all, where not per layer and head
    learned_shape: Callable[[dict], tuple] = lambda model: (model["layers"], model["heads"])  # its learned scalar's
    scalar: str | None = None  # the learned scalar its bundle reports, where it is not `learned` itself

    def output(self, q, k, v) -> np.ndarray:
        """The float64 head outputs the dense and the blockwise path must both equal."""
        if self.own_output is not None:
            return self.own_output(q, k, v)
        return np.einsum("bhts,bshd->bthd", self.weights(q, k), np.asarray(v, np.float64))

    def beyond_softmax(self, model: dict) -> int:
        """The parameters it learns beyond softmax at a config's model section."""
        return self.extra(model) if self.extra is not None else model["layers"] * model["heads"] * self.per_head(model)


CATALOG = [
    Reference("cog", lambda: make("cog"), cog_weights, plain_telemetry=True),
    Reference("softpick", lambda: make("softpick"), softpick_weights, plain_telemetry=True),
    Reference("stickbreaking", lambda: make("stickbreaking"), stickbreaking_weights, plain_telemetry=True),
    Reference("selective", lambda: make("selective"), selective_weights),
    Reference("sigmoid", lambda: make("sigmoid"), sigmoid_weights),
    Reference("softmax_sink", lambda: make("softmax_sink", sink_logit=SINKS),
              lambda q, k: sink_weights(q, k, SINKS[1]), "sink_logit", lambda model: 0.0),
    Reference("ssmax", lambda: make("ssmax", length_scale=SCALES), lambda q, k: ssmax_weights(q, k, SCALES[1]),
              "length_scale", lambda model: 1.0 / math.log(model["block_size"])),
    Reference("spherical_yat", lambda: make("spherical_yat"), spherical_yat_weights, row_mass=True),
    Reference("slay", lambda: make("slay"), slay_weights, row_mass=True),
    Reference("fox", lambda: make("fox", forget_bias=SINKS),
              lambda q, k: fox_weights(q, k, make("fox", forget_bias=SINKS)), "forget_bias", lambda model: 0.0,
              per_head=lambda model: model["d_model"] + 1),  # the gate's weights over every head's key, and its bias
    Reference("diff", lambda: make("diff", lambda_vectors=LAMBDA_VECTORS, norm_scale=NORM_SCALES),
              lambda q, k: _rows(logits64(q, k), lambda r, _: _softmax(r)), "lambda_vectors",
              own_output=lambda q, k, v: diff_output(q, k, v, make("diff", lambda_vectors=LAMBDA_VECTORS,
                                                                   norm_scale=NORM_SCALES)),
              # per layer: four λ vectors and the per-head normalisation's scale, d_head and 2 d_head wide
              extra=lambda model: model["layers"] * 6 * model["d_model"] // model["heads"],
              # λ per layer, reported as `lambda`: it starts at λ_init plus what the random vectors add
              scalar="lambda", initial=lambda model: [0.8 - 0.6 * math.exp(-0.3 * layer)
                                                      for layer in range(model["layers"])],
              learned_shape=lambda model: (model["layers"],)),
]
