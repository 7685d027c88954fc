"""Recipes: the paper experiments as make targets over nmtkit commands, and the benchmarks and checks
that the scripts of bin/ enter (``bench_*``, ``peer_*``, ``gpu_check*``, ``profile_train``)."""
