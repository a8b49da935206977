"""The spatial-sampling family, operators that read an image at positions their other inputs give:
GridSample (grid_sample.py, versions 16, 20 and 22), AffineGrid (affine_grid.py, version 20, the grids
GridSample reads), RoiAlign (roi_align.py, versions 10, 16 and 22), MaxRoiPool (max_roi_pool.py, versions
1 and 22) and DeformConv (deform_conv.py, versions 19 and 22). Their compiled loops are in
:mod:`customops.accel.spatial`."""
