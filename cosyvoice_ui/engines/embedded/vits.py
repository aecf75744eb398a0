"""The inference path of VITS as Piper's voices use it, in PyTorch.

Architecture from Kim et al., "Conditional Variational Autoencoder with Adversarial Learning for
End-to-End Text-to-Speech" (ICML 2021) and its reference implementation (jaywalnut310/vits:
models.py, attentions.py, modules.py, transforms.py), which Piper's trainer forks: a
transformer text encoder with relative-position attention (window 4), a stochastic duration
predictor (run in reverse with its flows), a residual-coupling flow, and a HiFi-GAN generator.
Hyper-parameters are read off the weights' shapes and the ONNX graph's conv attributes
(:mod:`.onnx_weights`); nothing is downloaded.

Precision: the text encoder and duration predictor always run in float32, so durations (and the
output length) do not depend on the dtype; the flow and the decoder, whose activations grow
with the audio length, run in the model dtype (float16 on CUDA when asked).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .onnx_weights import OnnxVoiceWeights
from .piper_backends import DECODE_CONTEXT_FRAMES, DECODE_WINDOW_FRAMES, window_spans

LRELU_SLOPE = 0.1


class LayerNorm(nn.Module):
    """LayerNorm over the channel axis of ``(batch, channels, time)``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        x = x.transpose(1, -1)
        x = F.layer_norm(x, (x.shape[-1],), self.gamma, self.beta, 1e-5)
        return x.transpose(1, -1)


class RelativeAttention(nn.Module):
    """Multi-head self-attention with relative position keys and values (Shaw et al., 2018)."""

    def __init__(self, channels: int, heads: int, window: int) -> None:
        super().__init__()
        self.heads, self.window = heads, window
        self.k_channels = channels // heads
        for name in ("conv_q", "conv_k", "conv_v", "conv_o"):
            setattr(self, name, nn.Conv1d(channels, channels, 1))
        self.emb_rel_k = nn.Parameter(torch.zeros(1, 2 * window + 1, self.k_channels))
        self.emb_rel_v = nn.Parameter(torch.zeros(1, 2 * window + 1, self.k_channels))

    def _relative_embeddings(self, emb, length: int):
        pad = max(length - (self.window + 1), 0)
        start = max((self.window + 1) - length, 0)
        if pad > 0:
            emb = F.pad(emb, [0, 0, pad, pad, 0, 0])
        return emb[:, start:start + 2 * length - 1]

    @staticmethod
    def _rel_to_abs(x):
        b, h, length, _ = x.shape
        x = F.pad(x, [0, 1])
        x = F.pad(x.reshape(b, h, length * 2 * length), [0, length - 1])
        return x.reshape(b, h, length + 1, 2 * length - 1)[:, :, :length, length - 1:]

    @staticmethod
    def _abs_to_rel(x):
        b, h, length, _ = x.shape
        x = F.pad(x, [0, length - 1])
        x = F.pad(x.reshape(b, h, length * length + length * (length - 1)), [length, 0])
        return x.reshape(b, h, length, 2 * length)[:, :, :, 1:]

    def forward(self, x, attn_mask):
        q, k, v = self.conv_q(x), self.conv_k(x), self.conv_v(x)
        b, d, t = k.shape
        q = q.view(b, self.heads, self.k_channels, t).transpose(2, 3) / math.sqrt(self.k_channels)
        k = k.view(b, self.heads, self.k_channels, t).transpose(2, 3)
        v = v.view(b, self.heads, self.k_channels, t).transpose(2, 3)
        scores = torch.matmul(q, k.transpose(-2, -1))
        rel_k = self._relative_embeddings(self.emb_rel_k, t)
        scores = scores + self._rel_to_abs(torch.matmul(q, rel_k.unsqueeze(0).transpose(-2, -1)))
        scores = scores.masked_fill(attn_mask == 0, -1e4)
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, v)
        rel_v = self._relative_embeddings(self.emb_rel_v, t)
        out = out + torch.matmul(self._abs_to_rel(p), rel_v.unsqueeze(0))
        return self.conv_o(out.transpose(2, 3).reshape(b, d, t))


class FFN(nn.Module):
    def __init__(self, channels: int, filter_channels: int, kernel: int) -> None:
        super().__init__()
        self.kernel = kernel
        self.conv_1 = nn.Conv1d(channels, filter_channels, kernel)
        self.conv_2 = nn.Conv1d(filter_channels, channels, kernel)

    def _pad(self, x):
        return F.pad(x, [(self.kernel - 1) // 2, self.kernel // 2])

    def forward(self, x, mask):
        x = torch.relu(self.conv_1(self._pad(x * mask)))
        return self.conv_2(self._pad(x * mask)) * mask


class TextEncoder(nn.Module):
    def __init__(self, n_symbols: int, channels: int, filter_channels: int, heads: int, layers: int,
                 kernel: int, window: int, out_channels: int) -> None:
        super().__init__()
        self.channels = channels
        self.emb = nn.Embedding(n_symbols, channels)
        self.encoder = nn.Module()
        self.encoder.attn_layers = nn.ModuleList(RelativeAttention(channels, heads, window) for _ in range(layers))
        self.encoder.norm_layers_1 = nn.ModuleList(LayerNorm(channels) for _ in range(layers))
        self.encoder.ffn_layers = nn.ModuleList(FFN(channels, filter_channels, kernel) for _ in range(layers))
        self.encoder.norm_layers_2 = nn.ModuleList(LayerNorm(channels) for _ in range(layers))
        self.proj = nn.Conv1d(channels, out_channels * 2, 1)

    def forward(self, ids, mask):
        x = self.emb(ids).transpose(1, 2) * math.sqrt(self.channels) * mask
        attn_mask = mask.unsqueeze(2) * mask.unsqueeze(-1)
        enc = self.encoder
        for attn, n1, ffn, n2 in zip(enc.attn_layers, enc.norm_layers_1, enc.ffn_layers, enc.norm_layers_2):
            x = n1(x + attn(x, attn_mask))
            x = n2(x + ffn(x, mask))
        x = x * mask
        m, logs = torch.split(self.proj(x) * mask, self.proj.out_channels // 2, dim=1)
        return x, m, logs


class DDSConv(nn.Module):
    """Dilated depth-separable convolutions (dilation kernel**i)."""

    def __init__(self, channels: int, kernel: int, layers: int) -> None:
        super().__init__()
        self.convs_sep = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, groups=channels, dilation=kernel ** i,
                      padding=(kernel * kernel ** i - kernel ** i) // 2) for i in range(layers))
        self.convs_1x1 = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in range(layers))
        self.norms_1 = nn.ModuleList(LayerNorm(channels) for _ in range(layers))
        self.norms_2 = nn.ModuleList(LayerNorm(channels) for _ in range(layers))

    def forward(self, x, mask, g=None):
        if g is not None:
            x = x + g
        for sep, n1, c11, n2 in zip(self.convs_sep, self.norms_1, self.convs_1x1, self.norms_2):
            y = F.gelu(n1(sep(x * mask)))
            y = F.gelu(n2(c11(y)))
            x = x + y
        return x * mask


def _searchsorted(bins, x, eps=1e-6):
    bins = bins.clone()
    bins[..., -1] += eps
    return torch.sum(x[..., None] >= bins, dim=-1) - 1


def rational_quadratic_spline_inverse(x, uw, uh, ud, tail_bound: float, min_bin: float = 1e-3, min_derivative: float = 1e-3):
    """Inverse of the monotonic rational-quadratic spline with linear tails (Durkan et al.,
    "Neural Spline Flows", NeurIPS 2019; VITS transforms.py). Values outside
    [-tail_bound, tail_bound] pass through unchanged."""
    num_bins = uw.shape[-1]
    ud = F.pad(ud, (1, 1))
    constant = math.log(math.exp(1 - min_derivative) - 1)
    ud[..., 0] = constant
    ud[..., -1] = constant
    inside = (x >= -tail_bound) & (x <= tail_bound)
    out = x.clone()
    if not inside.any():
        return out
    xi, uw, uh, ud = x[inside], uw[inside], uh[inside], ud[inside]
    left, right = -tail_bound, tail_bound

    def knots(unnormalized):
        w = torch.softmax(unnormalized, dim=-1)
        w = min_bin + (1 - min_bin * num_bins) * w
        cum = F.pad(torch.cumsum(w, dim=-1), (1, 0), value=0.0)
        cum = (right - left) * cum + left
        cum[..., 0], cum[..., -1] = left, right
        return cum, cum[..., 1:] - cum[..., :-1]

    cumwidths, widths = knots(uw)
    cumheights, heights = knots(uh)
    derivatives = min_derivative + F.softplus(ud)
    idx = _searchsorted(cumheights, xi)[..., None]

    def pick(t):
        return t.gather(-1, idx)[..., 0]

    in_cumwidths, in_widths = pick(cumwidths), pick(widths)
    in_cumheights, in_heights = pick(cumheights), pick(heights)
    delta = heights / widths
    in_delta = pick(delta)
    d0, d1 = pick(derivatives), derivatives[..., 1:].gather(-1, idx)[..., 0]
    dy = xi - in_cumheights
    a = dy * (d0 + d1 - 2 * in_delta) + in_heights * (in_delta - d0)
    b = in_heights * d0 - dy * (d0 + d1 - 2 * in_delta)
    c = -in_delta * dy
    root = (2 * c) / (-b - torch.sqrt(b.pow(2) - 4 * a * c))
    out[inside] = root * in_widths + in_cumwidths
    return out


class ConvFlow(nn.Module):
    def __init__(self, filter_channels: int, kernel: int, layers: int, num_bins: int = 10, tail_bound: float = 5.0) -> None:
        super().__init__()
        self.filter_channels, self.num_bins, self.tail_bound = filter_channels, num_bins, tail_bound
        self.pre = nn.Conv1d(1, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel, layers)
        self.proj = nn.Conv1d(filter_channels, num_bins * 3 - 1, 1)

    def reverse(self, x, mask, g):
        x0, x1 = torch.split(x, [1, 1], dim=1)
        h = self.proj(self.convs(self.pre(x0), mask, g=g)) * mask
        b, c, t = x0.shape
        h = h.reshape(b, c, -1, t).permute(0, 1, 3, 2)
        scale = math.sqrt(self.filter_channels)
        uw, uh, ud = h[..., :self.num_bins] / scale, h[..., self.num_bins:2 * self.num_bins] / scale, h[..., 2 * self.num_bins:]
        x1 = rational_quadratic_spline_inverse(x1, uw, uh, ud, self.tail_bound)
        return torch.cat([x0, x1], dim=1) * mask


class StochasticDurationPredictor(nn.Module):
    """Only the reverse (sampling) direction, with the unused first ConvFlow dropped as in VITS."""

    def __init__(self, channels: int, filter_channels: int, kernel: int, n_flows: int = 4) -> None:
        super().__init__()
        self.pre = nn.Conv1d(channels, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel, 3)
        self.proj = nn.Conv1d(filter_channels, filter_channels, 1)
        self.flows = nn.ModuleDict({str(i): ConvFlow(filter_channels, kernel, 3) for i in range(3, 2 * n_flows, 2)})
        self.register_buffer("affine_m", torch.zeros(2, 1))
        self.register_buffer("affine_exp_neg_logs", torch.ones(2, 1))

    def forward(self, x, mask, noise_w: float, generator: torch.Generator | None = None):
        x = self.proj(self.convs(self.pre(x), mask)) * mask
        z = torch.randn(x.shape[0], 2, x.shape[2], device=x.device, dtype=x.dtype, generator=generator) * noise_w
        # Reversed flow list [Flip, CF7, Flip, CF5, Flip, CF3, Flip, Affine] (CF1 is never used).
        for key in sorted(self.flows, key=int, reverse=True):
            z = torch.flip(z, [1])
            z = self.flows[key].reverse(z, mask, x)
        z = torch.flip(z, [1])
        z = (z - self.affine_m) * self.affine_exp_neg_logs * mask
        return z[:, :1]  # log durations


class WN(nn.Module):
    def __init__(self, hidden: int, kernel: int, layers: int, dilations: list[int]) -> None:
        super().__init__()
        self.hidden = hidden
        self.in_layers = nn.ModuleList(
            nn.Conv1d(hidden, 2 * hidden, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations)
        self.res_skip_layers = nn.ModuleList(
            nn.Conv1d(hidden, 2 * hidden if i < layers - 1 else hidden, 1) for i in range(layers))

    def forward(self, x, mask):
        output = torch.zeros_like(x)
        for i, (inp, rs) in enumerate(zip(self.in_layers, self.res_skip_layers)):
            a = inp(x)
            acts = torch.tanh(a[:, :self.hidden]) * torch.sigmoid(a[:, self.hidden:])
            res_skip = rs(acts)
            if i < len(self.in_layers) - 1:
                x = (x + res_skip[:, :self.hidden]) * mask
                output = output + res_skip[:, self.hidden:]
            else:
                output = output + res_skip
        return output * mask


class ResidualCouplingLayer(nn.Module):
    def __init__(self, channels: int, hidden: int, kernel: int, layers: int, dilations: list[int]) -> None:
        super().__init__()
        self.half = channels // 2
        self.pre = nn.Conv1d(self.half, hidden, 1)
        self.enc = WN(hidden, kernel, layers, dilations)
        self.post = nn.Conv1d(hidden, self.half, 1)

    def reverse(self, x, mask):
        x0, x1 = torch.split(x, [self.half] * 2, dim=1)
        m = self.post(self.enc(self.pre(x0) * mask, mask)) * mask
        return torch.cat([x0, (x1 - m) * mask], dim=1)  # mean-only coupling


class ResBlock2(nn.Module):
    def __init__(self, channels: int, kernel: int, dilations: list[int]) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=(kernel * d - d) // 2) for d in dilations)

    def forward(self, x):
        for c in self.convs:
            x = x + c(F.leaky_relu(x, LRELU_SLOPE))
        return x


class Generator(nn.Module):
    """HiFi-GAN generator (Kong et al., NeurIPS 2020) with ResBlock2, as Piper's medium voices use."""

    def __init__(self, in_channels: int, initial_channels: int, upsample: list[tuple[int, int]],
                 resblock_kernels: list[int], resblock_dilations: list[list[int]]) -> None:
        super().__init__()
        self.num_kernels = len(resblock_kernels)
        self.conv_pre = nn.Conv1d(in_channels, initial_channels, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        ch = initial_channels
        for rate, kernel in upsample:
            self.ups.append(nn.ConvTranspose1d(ch, ch // 2, kernel, rate, padding=(kernel - rate) // 2))
            ch //= 2
            for k, d in zip(resblock_kernels, resblock_dilations):
                self.resblocks.append(ResBlock2(ch, k, d))
        self.conv_post = nn.Conv1d(ch, 1, 7, padding=3, bias=False)

    def forward(self, x):
        """Latent ``(1, C, frames)`` to waveform ``(1, 1, frames * hop)`` in one pass."""
        x = self.conv_pre(x)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            blocks = self.resblocks[i * self.num_kernels:(i + 1) * self.num_kernels]
            x = sum(block(x) for block in blocks) / self.num_kernels
        return torch.tanh(self.conv_post(F.leaky_relu(x)))

    def decode_windowed(self, z, hop: int, window_frames: int = DECODE_WINDOW_FRAMES,
                        context_frames: int = DECODE_CONTEXT_FRAMES):
        """:meth:`forward` in windows of ``window_frames`` latent frames, each decoded with
        ``context_frames`` of its neighbours on either side and cropped to its own span
        (:func:`.piper_backends.window_spans`, where the receptive field is worked out).

        Memory then grows with the window, not with the sentence: the decoder's activations at
        the audio rate are its largest. The output equals one pass as long as the context covers
        the receptive field; ``bench/vits_equivalence.py`` measures it against ONNX Runtime.

        Returns:
            ``(1, 1, frames * hop)``, as :meth:`forward`.
        """
        pieces = [self.forward(z[:, :, a:b])[:, :, (start - a) * hop:(end - a) * hop]
                  for start, end, a, b in window_spans(z.shape[2], window_frames, context_frames)]
        return torch.cat(pieces, dim=2) if len(pieces) > 1 else pieces[0]


class PiperVits(nn.Module):
    """A Piper VITS voice. Build with :meth:`from_onnx_weights`; call :meth:`infer`."""

    def __init__(self, weights: OnnxVoiceWeights) -> None:
        super().__init__()
        p, dil = weights.params, weights.conv_dilation
        n_symbols, hidden = p["enc_p.emb.weight"].shape
        inter = p["enc_p.proj.weight"].shape[0] // 2
        layers = len({k.split(".")[3] for k in p if k.startswith("enc_p.encoder.attn_layers.")})
        window = (p["enc_p.encoder.attn_layers.0.emb_rel_k"].shape[1] - 1) // 2
        heads = hidden // p["enc_p.encoder.attn_layers.0.emb_rel_k"].shape[2]
        filter_channels, _, ffn_kernel = p["enc_p.encoder.ffn_layers.0.conv_1.weight"].shape
        self.enc_p = TextEncoder(n_symbols, hidden, filter_channels, heads, layers, ffn_kernel, window, inter)
        dp_filter, _, dp_kernel = p["dp.convs.convs_sep.0.weight"].shape
        dp_flows = sorted({int(k.split(".")[2]) for k in p if k.startswith("dp.flows.") and k.split(".")[2] != "0"})
        self.dp = StochasticDurationPredictor(hidden, dp_filter, dp_kernel, n_flows=(max(dp_flows) + 1) // 2)
        flow_ids = sorted({int(k.split(".")[2]) for k in p if k.startswith("flow.flows.")})
        wn_layers = len({k.split(".")[5] for k in p if k.startswith("flow.flows.0.enc.in_layers.")})
        wn_hidden, _, wn_kernel = p["flow.flows.0.enc.in_layers.0.weight"].shape
        wn_dil = [dil.get(f"flow.flows.0.enc.in_layers.{i}", 1) for i in range(wn_layers)]
        self.flow_ids = flow_ids
        self.flow = nn.ModuleDict({str(i): ResidualCouplingLayer(inter, wn_hidden // 2, wn_kernel, wn_layers, wn_dil)
                                   for i in flow_ids})
        ups = sorted({int(k.split(".")[2]) for k in p if k.startswith("dec.ups.")})
        upsample = [(weights.conv_stride[f"dec.ups.{i}"], p[f"dec.ups.{i}.weight"].shape[2]) for i in ups]
        n_blocks = len({k.split(".")[2] for k in p if k.startswith("dec.resblocks.")})
        per_up = n_blocks // len(ups)
        rb_kernels = [p[f"dec.resblocks.{j}.convs.0.weight"].shape[2] for j in range(per_up)]
        rb_convs = len({k.split(".")[4] for k in p if k.startswith("dec.resblocks.0.convs.")})
        rb_dil = [[dil.get(f"dec.resblocks.{j}.convs.{c}", 1) for c in range(rb_convs)] for j in range(per_up)]
        self.dec = Generator(inter, p["dec.conv_pre.weight"].shape[0], upsample, rb_kernels, rb_dil)
        self._load(p)
        self.hop_length = int(np.prod([u for u, _ in upsample]))

    def _load(self, p: dict[str, np.ndarray]) -> None:
        state = {}
        for name, value in p.items():
            if name.startswith("dp.flows.0."):
                continue
            key = name
            if name.startswith("flow.flows."):
                key = "flow." + name[len("flow.flows."):]
            elif name.startswith("dp.flows."):
                key = "dp.flows." + name[len("dp.flows."):]
            state[key] = torch.from_numpy(np.ascontiguousarray(value))
        state["dp.affine_m"] = torch.from_numpy(p["dp.flows.0.m"])
        state["dp.affine_exp_neg_logs"] = torch.from_numpy(p["dp.flows.0.exp_neg_logs"])
        missing, unexpected = self.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ValueError(f"voice weights do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")

    @torch.inference_mode()
    def infer(self, phoneme_ids: torch.Tensor, noise_scale: float, length_scale: float, noise_w: float,
              generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Phoneme ids to waveform.

        Args:
            phoneme_ids: int64, shape ``(1, T)``, on the model's device.
            noise_scale / length_scale / noise_w: as in Piper's voice config ``inference``.
            generator: for reproducible noise (``seed``).
            dtype: precision of the flow and decoder (float32 or float16).

        Returns:
            float32 tensor of shape ``(samples,)`` in [-1, 1] at the voice's sample rate
            (``samples = frames * hop_length``).
        """
        mask = torch.ones(1, 1, phoneme_ids.shape[1], device=phoneme_ids.device)
        x, m_p, logs_p = self.enc_p(phoneme_ids, mask)
        logw = self.dp(x, mask, noise_w, generator)
        w_ceil = torch.ceil(torch.exp(logw) * mask * length_scale)
        frames = int(torch.clamp_min(w_ceil.sum(), 1).item())
        # Hard monotonic alignment: phoneme i covers frames [cum[i-1], cum[i]).
        cum = torch.cumsum(w_ceil[0, 0], dim=0)
        frame_idx = torch.arange(frames, device=x.device, dtype=cum.dtype)
        phoneme_of_frame = torch.searchsorted(cum, frame_idx, right=True).clamp_max(phoneme_ids.shape[1] - 1)
        m = m_p[:, :, phoneme_of_frame]
        logs = logs_p[:, :, phoneme_of_frame]
        noise = torch.randn(m.shape, device=m.device, dtype=m.dtype, generator=generator)
        z = (m + noise * torch.exp(logs) * noise_scale).to(dtype)
        y_mask = torch.ones(1, 1, frames, device=x.device, dtype=dtype)
        for i in reversed(self.flow_ids):
            z = torch.flip(z, [1])  # the Flip that follows each coupling layer, undone first
            z = self.flow[str(i)].reverse(z, y_mask)
        return self.dec.decode_windowed(z * y_mask, self.hop_length)[0, 0].float()
