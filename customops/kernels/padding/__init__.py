"""The padding family: Pad (pad.py, versions 11 to 25), CenterCropPad (center_crop_pad.py, version 18, on
Pad's copies) and Col2Im (col2im.py, version 18). Col2Im is a fold, the inverse of im2col: it places each
column block at the image positions its strides and dilations fix and crops the pads, as Pad and
CenterCropPad place their input in a larger or smaller canvas; it samples no position from data (the
spatial family's grids, ROIs and offsets) and filters nothing (resampling's Resize). Their compiled loops
are in :mod:`customops.accel.padding`."""
