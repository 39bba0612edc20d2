"""Small networks for decoder fixtures: the layout of a diffusion
preconditioner (persistent wrapper, U-Net body, ModuleDict containers) with
deliberately awkward tensors (views with storage offsets, transposed and
expanded buffers, several dtypes, a non-persistent buffer, empty and rank-0
tensors). Test-only code."""

import numpy as np
import torch
from torch_utils import persistence


@persistence.persistent_class
class Linear(torch.nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_features) / np.sqrt(in_features))
        if bias:
            self.bias = torch.nn.Parameter(torch.randn(out_features) * 0.1)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        x = x @ self.weight.t()
        return x if self.bias is None else x + self.bias


@persistence.persistent_class
class Conv2d(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel, bias=True):
        super().__init__()
        self.kernel = kernel
        self.weight = torch.nn.Parameter(torch.randn(out_channels, in_channels, kernel, kernel) * 0.05)
        self.bias = torch.nn.Parameter(torch.randn(out_channels) * 0.01) if bias else None
        self.register_buffer("resample_filter", torch.tensor([1.0, 3.0, 3.0, 1.0]).ger(torch.tensor([1.0, 3.0, 3.0, 1.0])) / 64)

    def forward(self, x):
        return torch.nn.functional.conv2d(x, self.weight, self.bias, padding=self.kernel // 2)


@persistence.persistent_class
class GroupNorm(torch.nn.Module):
    def __init__(self, num_channels, num_groups=4, eps=1e-5):
        super().__init__()
        self.num_groups = min(num_groups, num_channels)
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(num_channels) + 0.1 * torch.randn(num_channels))
        self.bias = torch.nn.Parameter(torch.zeros(num_channels) + 0.1 * torch.randn(num_channels))

    def forward(self, x):
        return torch.nn.functional.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


@persistence.persistent_class
class UNetBlock(torch.nn.Module):
    def __init__(self, in_channels, out_channels, emb_channels, dropout=0.0, skip_scale=1.0):
        super().__init__()
        self.dropout = dropout
        self.skip_scale = skip_scale
        self.norm0 = GroupNorm(in_channels)
        self.conv0 = Conv2d(in_channels, out_channels, 3)
        self.affine = Linear(emb_channels, out_channels)
        self.norm1 = GroupNorm(out_channels)
        self.conv1 = Conv2d(out_channels, out_channels, 3)
        self.skip = Conv2d(in_channels, out_channels, 1, bias=False) if in_channels != out_channels else None

    def forward(self, x, emb):
        h = self.conv0(torch.nn.functional.silu(self.norm0(x)))
        h = h + self.affine(emb)[:, :, None, None]
        h = self.conv1(torch.nn.functional.dropout(torch.nn.functional.silu(self.norm1(h)), self.dropout, self.training))
        return (h + (x if self.skip is None else self.skip(x))) * self.skip_scale


@persistence.persistent_class
class PositionalEmbedding(torch.nn.Module):
    """Carries tensors whose storage layout differs from their logical layout
    (the class name is one the edm-checkpoint profile admits)."""

    def __init__(self, n=5):
        super().__init__()
        base = torch.randn(4 * n)
        self.head = torch.nn.Parameter(base[2:8].view(2, 3))          # storage offset 2
        self.strided = torch.nn.Parameter(base.view(4, n)[:, 1:4])    # non-contiguous, offset 1
        self.register_buffer("proj", torch.randn(3, 4).t())              # transposed
        self.register_buffer("expanded", torch.randn(3, 1).expand(3, 4))  # stride 0
        self.register_buffer("f16", torch.randn(2, 3).half())
        self.register_buffer("b16", torch.randn(5).bfloat16())
        self.register_buffer("f64", torch.randn(2, 2, dtype=torch.float64))
        self.register_buffer("steps", torch.arange(6, dtype=torch.int64).view(2, 3))
        self.register_buffer("i32", torch.tensor([-1, 2, 2**31 - 1], dtype=torch.int32))
        self.register_buffer("i16", torch.tensor([-3, 7], dtype=torch.int16))
        self.register_buffer("i8", torch.tensor([-128, 127], dtype=torch.int8))
        self.register_buffer("u8", torch.tensor([0, 255, 7], dtype=torch.uint8))
        self.register_buffer("mask", torch.tensor([True, False, True]))
        self.register_buffer("c64", torch.randn(2, 2, dtype=torch.complex64).t())
        self.register_buffer("empty", torch.empty(0, 3))
        self.register_buffer("scalar", torch.tensor(2.5))
        self.register_buffer("nan", torch.tensor([float("nan"), float("inf"), -0.0]))
        self.register_buffer("cache", torch.ones(3), persistent=False)
        self.register_buffer("absent", None)

    def forward(self, x):
        return x


@persistence.persistent_class
class SongUNet(torch.nn.Module):
    def __init__(self, img_resolution, in_channels, out_channels, model_channels=8,
                 channel_mult=(1, 2), dropout=0.1, emb_channels=16):
        super().__init__()
        self.map_noise = Linear(1, emb_channels)
        self.map_layer = Linear(emb_channels, emb_channels, bias=False)
        self.enc = torch.nn.ModuleDict()
        cout = in_channels
        for level, mult in enumerate(channel_mult):
            res = img_resolution >> level
            cin, cout = cout, model_channels * mult
            self.enc[f"{res}x{res}_block{level}"] = UNetBlock(cin, cout, emb_channels, dropout=dropout, skip_scale=np.sqrt(0.5))
        self.dec = torch.nn.ModuleDict()
        self.dec["out_norm"] = GroupNorm(cout)
        self.dec["out_conv"] = Conv2d(cout, out_channels, 3)
        self.odd = PositionalEmbedding()

    def forward(self, x, noise_labels):
        emb = self.map_layer(torch.nn.functional.silu(self.map_noise(noise_labels[:, None])))
        for block in self.enc.values():
            x = block(x, emb)
        return self.dec["out_conv"](torch.nn.functional.silu(self.dec["out_norm"](x)))


@persistence.persistent_class
class EDMPrecond(torch.nn.Module):
    def __init__(self, img_resolution, img_channels, label_dim=0, use_fp16=False,
                 sigma_min=0, sigma_max=float("inf"), sigma_data=0.5, model_type="SongUNet", **model_kwargs):
        super().__init__()
        self.img_resolution = img_resolution
        self.img_channels = img_channels
        self.label_dim = label_dim
        self.use_fp16 = use_fp16
        self.sigma_min = sigma_min
        self.sigma_max = sigma_max
        self.sigma_data = sigma_data
        self.model = globals()[model_type](img_resolution=img_resolution, in_channels=img_channels,
                                           out_channels=img_channels, **model_kwargs)

    def forward(self, x, sigma):
        c_skip = self.sigma_data ** 2 / (sigma ** 2 + self.sigma_data ** 2)
        return c_skip * x + self.model(x, sigma.log() / 4)


def bulk(params, layers=147):
    """A ModuleDict of linear layers holding about params parameters."""
    blocks = torch.nn.ModuleDict()
    per = max(64, params // layers)
    for i in range(layers):
        blocks[f"b{i}"] = Linear(per // 64, 64, bias=False)
    return blocks
