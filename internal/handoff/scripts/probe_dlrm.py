import sys, json
print("python %d.%d.%d" % tuple(sys.version_info[:3]))
try:
    import torch
    print("torch " + torch.__version__)
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability(0)
        arch = "sm_%d%d" % (major, minor)
        print("gpu yes")
        print("arch %s %s" % (arch, "yes" if arch in torch.cuda.get_arch_list() else "no"))
    else:
        print("gpu no")
except Exception as e:
    print("torch-error %s" % (str(e).splitlines() or [type(e).__name__])[0])
try:
    try:
        from importlib import metadata
        d = metadata.distribution("mlperf_logging")
        print("mlperf_logging " + d.version)
        t = d.read_text("direct_url.json")
        if t:
            c = json.loads(t).get("vcs_info", {}).get("commit_id")
            if c:
                print("mlperf_logging_commit " + c)
    except ImportError:
        import pkg_resources
        print("mlperf_logging " + pkg_resources.get_distribution("mlperf_logging").version)
except Exception as e:
    print("mlperf_logging-error " + type(e).__name__)
