"""Tiny networks with the interfaces of EDM's training/networks.py, for
repro's tests: EDMPrecond (the paper's preconditioning, Table 1) around a
small convolutional SongUNet. Not EDM's code."""

import numpy as np
import torch
from torch_utils import persistence


@persistence.persistent_class
class Linear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_features) / np.sqrt(in_features))
        self.bias = torch.nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


@persistence.persistent_class
class Conv2d(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel):
        super().__init__()
        self.kernel = kernel
        self.weight = torch.nn.Parameter(torch.randn(out_channels, in_channels, kernel, kernel) / np.sqrt(in_channels * kernel * kernel))
        self.bias = torch.nn.Parameter(torch.randn(out_channels) * 0.1)

    def forward(self, x):
        return torch.nn.functional.conv2d(x, self.weight, self.bias, padding=self.kernel // 2)


@persistence.persistent_class
class UNetBlock(torch.nn.Module):
    def __init__(self, channels, emb_channels, skip_scale=1.0):
        super().__init__()
        self.skip_scale = skip_scale
        self.conv = Conv2d(channels, channels, 3)
        self.affine = Linear(emb_channels, channels)

    def forward(self, x, emb):
        h = torch.nn.functional.silu(x + self.affine(emb)[:, :, None, None])
        return (x + self.conv(h)) * self.skip_scale


@persistence.persistent_class
class SongUNet(torch.nn.Module):
    def __init__(self, img_resolution, in_channels, out_channels, label_dim=0, model_channels=8, num_blocks=2):
        super().__init__()
        self.map_noise = Linear(2, model_channels)
        self.map_label = Linear(label_dim, model_channels) if label_dim else None
        self.enc = Conv2d(in_channels, model_channels, 3)
        self.blocks = torch.nn.ModuleList([UNetBlock(model_channels, model_channels, skip_scale=np.sqrt(0.5)) for _ in range(num_blocks)])
        self.dec = Conv2d(model_channels, out_channels, 3)

    def forward(self, x, noise_labels, class_labels=None):
        emb = self.map_noise(torch.stack([noise_labels.sin(), noise_labels.cos()], dim=1))
        if self.map_label is not None:
            emb = emb + self.map_label(class_labels)
        emb = torch.nn.functional.silu(emb)
        h = self.enc(x)
        for block in self.blocks:
            h = block(h, emb)
        return self.dec(torch.nn.functional.silu(h))


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
        self.model = {"SongUNet": SongUNet}[model_type](
            img_resolution=img_resolution, in_channels=img_channels, out_channels=img_channels,
            label_dim=label_dim, **model_kwargs)

    def forward(self, x, sigma, class_labels=None, force_fp32=False):
        x = x.to(torch.float32)
        sigma = sigma.to(torch.float32).reshape(-1, 1, 1, 1)
        if self.label_dim == 0:
            class_labels = None
        elif class_labels is None:
            class_labels = torch.zeros([1, self.label_dim], device=x.device)
        else:
            class_labels = class_labels.to(torch.float32).reshape(-1, self.label_dim)
        sd2 = self.sigma_data ** 2
        c_skip = sd2 / (sigma ** 2 + sd2)
        c_out = sigma * self.sigma_data / (sigma ** 2 + sd2).sqrt()
        c_in = 1 / (sd2 + sigma ** 2).sqrt()
        c_noise = sigma.log() / 4
        f = self.model(c_in * x, c_noise.flatten().expand(x.shape[0]), class_labels)
        return c_skip * x + c_out * f.to(torch.float32)

    def round_sigma(self, sigma):
        return torch.as_tensor(sigma)
