"""The resampling family: Resize (resize.py, versions 10 to 19) and Upsample (upsample.py, versions 7
and 9, a thin layer over Resize). Their compiled loops and Resize's choice among them are in
:mod:`customops.accel.resampling`."""
