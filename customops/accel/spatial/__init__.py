"""Compiled loops of the spatial-sampling family (customops.kernels.spatial): GridSample on two spatial
axes (grid_sample_loops.py), AffineGrid's grids (affine_grid_loops.py), RoiAlign's bins
(roi_align_loops.py), MaxRoiPool's bins (roi_pool_loops.py) and DeformConv's deformable im2col
(deform_loops.py)."""
