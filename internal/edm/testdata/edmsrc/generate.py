"""The sampler interface of EDM's generate.py for repro's tests, written from
Algorithm 2 of the paper (Karras et al., 2022): Heun steps over the
sigma schedule (sigma_max^(1/rho) + i/(N-1) (sigma_min^(1/rho) -
sigma_max^(1/rho)))^rho with optional churn. Not EDM's code."""

import math

import torch


def edm_sampler(net, latents, class_labels=None, randn_like=torch.randn_like,
                num_steps=18, sigma_min=0.002, sigma_max=80, rho=7,
                S_churn=0, S_min=0, S_max=float("inf"), S_noise=1):
    lo = max(sigma_min, net.sigma_min)
    hi = min(sigma_max, net.sigma_max)
    i = torch.arange(num_steps, dtype=torch.float64, device=latents.device)
    a, b = hi ** (1 / rho), lo ** (1 / rho)
    sigmas = net.round_sigma((a + i / (num_steps - 1) * (b - a)) ** rho)
    sigmas = torch.cat([sigmas, sigmas.new_zeros(1)])
    x = latents.to(torch.float64) * sigmas[0]
    for k in range(num_steps):
        s_cur, s_next = sigmas[k], sigmas[k + 1]
        gamma = min(S_churn / num_steps, math.sqrt(2) - 1) if S_min <= s_cur <= S_max else 0
        s_hat = net.round_sigma(s_cur * (1 + gamma))
        x_hat = x + (s_hat ** 2 - s_cur ** 2).sqrt() * S_noise * randn_like(x)
        slope = (x_hat - net(x_hat, s_hat, class_labels).to(torch.float64)) / s_hat
        x = x_hat + (s_next - s_hat) * slope
        if k < num_steps - 1:
            slope2 = (x - net(x, s_next, class_labels).to(torch.float64)) / s_next
            x = x_hat + (s_next - s_hat) * (slope + slope2) / 2
    return x


class StackedRandomGenerator:
    """One torch.Generator per image, seeded with seed mod 2^32."""

    def __init__(self, device, seeds):
        self.generators = [torch.Generator(device).manual_seed(int(s) % (1 << 32)) for s in seeds]

    def randn(self, size, **kwargs):
        return torch.stack([torch.randn(size[1:], generator=g, **kwargs) for g in self.generators])

    def randn_like(self, x):
        return self.randn(x.shape, dtype=x.dtype, layout=x.layout, device=x.device)

    def randint(self, *args, size, **kwargs):
        return torch.stack([torch.randint(*args, size=size[1:], generator=g, **kwargs) for g in self.generators])
