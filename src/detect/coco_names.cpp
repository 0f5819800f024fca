// placeholder replaced by the detection pipeline
