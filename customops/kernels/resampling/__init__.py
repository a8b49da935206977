"""The resampling family: Resize (resize.py, versions 10 to 19: the planner and the numpy passes, over
resize_spec.py, the spec of one axis) and Upsample (upsample.py, versions 7 and 9, a thin layer over
Resize). Their compiled loops and Resize's choice among them are in
:mod:`customops.accel.resampling`."""
