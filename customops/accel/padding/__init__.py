"""Compiled loops of the padding family (customops.kernels.padding): Pad's rows of the last two axes,
which CenterCropPad runs too (pad_loops.py), and Col2Im's fold of 2-D images (col2im_loops.py)."""
