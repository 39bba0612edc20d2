"""Placeholder package: EDM's persistence imports dnnlib; these fixtures do not need it."""
