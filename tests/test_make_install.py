"""make install's torch: the CPU build pinned wherever it lies among pip's find-links, so that a
CPU machine never downloads CUDA packages (a dry run of the Makefile, nothing installed)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CPU_WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def _install_commands(tmp_path: Path, find_links: str, *settings: str) -> str:
    # make test-torch TORCH=… exports its TORCH_CONSTRAINT to the suite: this is about the default
    env = {k: v for k, v in os.environ.items() if k != "TORCH_CONSTRAINT"}
    env |= {"PIP_FIND_LINKS": find_links, "PIP_CONFIG_FILE": os.devnull}
    venv = tmp_path / "venv"
    cmd = ["make", "-n", "-C", str(ROOT), f"VENV={venv}", *settings, f"{venv}/.installed"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout


def test_the_cpu_torch_is_pinned_from_whichever_find_links_folder_holds_it(tmp_path):
    """Only the first folder was looked in: with another before the wheels', pip took CUDA's torch."""
    empty, wheels = tmp_path / "empty", tmp_path / "wheels"
    empty.mkdir()
    wheels.mkdir()
    (wheels / CPU_WHEEL).touch()
    for find_links in (f"{empty} {wheels}", f"file://{wheels}"):
        out = _install_commands(tmp_path, find_links)
        assert f"-c constraints/torch-cpu.txt --find-links {wheels} " in out, (find_links, out)


@pytest.mark.parametrize(
    ("machine", "pin"),
    [
        (
            ["LINUX=Linux", "NVIDIA="],
            "-c constraints/torch-cpu.txt --extra-index-url https://download.pytorch.org/whl/cpu ",
        ),
        (["LINUX=Linux", "NVIDIA=/dev/nvidiactl"], None),
        (["LINUX=", "NVIDIA="], None),
    ],
    ids=["linux-without-gpu", "linux-with-nvidia-driver", "not-linux"],
)
def test_without_a_local_cpu_wheel_a_linux_cpu_takes_pytorchs_cpu_index(tmp_path, machine, pin):
    """PyPI's Linux torch is the CUDA build: a CPU machine with no CPU wheel at hand asks PyTorch's CPU
    index for the pinned version; a GPU machine, or one whose PyPI torch has no CUDA, is left to pip."""
    empty = tmp_path / "empty"
    empty.mkdir()
    out = _install_commands(tmp_path, str(empty), f"FIND_LINKS={empty}", *machine)
    install = next(line for line in out.splitlines() if "pip install" in line)
    if pin:
        assert pin in install, install
    else:
        assert "-c constraints" not in install and "--extra-index-url" not in install, install


def test_the_makefile_sees_an_nvidia_driver_where_there_is_one(tmp_path):
    """Its own look, unset: an NVIDIA driver's files or nvidia-smi (a blank once read as a driver)."""
    import shutil

    driver = any(Path(p).exists() for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version", "/dev/dxg"))
    driver = driver or shutil.which("nvidia-smi") is not None
    empty = tmp_path / "empty"
    empty.mkdir()
    out = _install_commands(tmp_path, str(empty), f"FIND_LINKS={empty}", "LINUX=Linux")
    install = next(line for line in out.splitlines() if "pip install" in line)
    assert ("--extra-index-url" in install) is not driver, install
