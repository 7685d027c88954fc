"""The CPU description runs record and print: family and model tell apart parts of one name."""

from nmtkit.core.machine import describe, machine, this_cpu

ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9B14
flags\t\t: fpu sse2 avx2 fma avx512f avx512_vnni avx512_bf16 sha_ni
"""


def test_family_model_and_the_speed_flags_are_read():
    cpu = this_cpu(ZEN4)
    assert (cpu.name, cpu.vendor, cpu.family, cpu.model) == ("AMD EPYC 9B14", "AuthenticAMD", 25, 17)
    assert cpu.flags == ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16") and cpu.native_bf16
    avx2 = this_cpu(ZEN4.replace(" avx512f avx512_vnni avx512_bf16", ""))
    assert avx2.flags == ("avx2", "fma") and not avx2.native_bf16
    assert this_cpu("").family is None  # no /proc/cpuinfo fields: the platform's name alone


def test_machine_json_describes_this_cpu():
    m, cpu = machine(), this_cpu()
    assert (m["cpu"], m["family"], m["model"], m["flags"]) == (cpu.name, cpu.family, cpu.model, list(cpu.flags))
    text = describe(m)
    gpu = f"{m['gpu']}, " if "gpu" in m else ""  # a GPU machine's record leads with its GPU
    assert text.startswith(gpu + cpu.name) and f"{cpu.cores} cores" in text
    assert describe({**m, "gpu": "NVIDIA H200"}).startswith(f"NVIDIA H200, {cpu.name}")
    if cpu.family is not None:
        assert f"(family {cpu.family}, model {cpu.model})" in text
    assert "family" not in describe({k: v for k, v in m.items() if k not in ("family", "model")})  # older files
