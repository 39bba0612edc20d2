import sys
print("python %d.%d.%d" % tuple(sys.version_info[:3]))
try:
    import tensorflow as tf
except Exception as e:
    print("tensorflow-error %s" % (str(e).splitlines() or [type(e).__name__])[0])
    sys.exit(0)
print("tensorflow " + tf.__version__)
try:
    gpu = tf.test.is_gpu_available()
except Exception:
    gpu = False
print("gpu " + ("yes" if gpu else "no"))
