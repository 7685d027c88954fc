#!/bin/bash
# Usage: bench/peers/install.sh <joeynmt|opennmt|fairseq|marian> [DIR=$BENCH_DIR/<name>]
# Creates $BENCH_DIR/<name>/venv, installs the local CPU torch 2.13.0 wheel first (not for Marian, which
# is C++), then the toolkit.
# Log: $BENCH_DIR/<name>/install.log ; timing+size: $BENCH_DIR/<name>/install_time.txt
set -u
BENCH_DIR=${BENCH_DIR:-$HOME/.cache/nmtkit-bench}
NAME=$1
D=${2:-$BENCH_DIR/$NAME}
mkdir -p $D
V=$D/venv
TORCH_WHL=${TORCH_WHL:-"torch==2.13.0"}  # a CPU build where pip finds one (PIP_FIND_LINKS); set TORCH_WHL to override
start=$(date +%s.%N)
{
set -x
python3 -m venv $V
[ "$NAME" = marian ] || $V/bin/pip install $TORCH_WHL
case $NAME in
  joeynmt)
    # joeynmt 2.3.0 requires torch>=1.12 -> plain install keeps torch 2.13
    $V/bin/pip install joeynmt==2.3.0 sacremoses sacrebleu
    # joeynmt 2.3.0 imports importlib_metadata (helpers.py) but does not declare it
    $V/bin/pip install importlib_metadata
    # its "plateau" schedule passes verbose= to ReduceLROnPlateau, which torch 2.7 removed: drop that
    # argument (it only silenced a message)
    sed -i '/"verbose": False,/d' $V/lib/python3*/site-packages/joeynmt/builders.py
    ;;
  opennmt)
    # opennmt-py 3.5.1 pins torch>=2.1,<2.3 -> a plain install would replace torch 2.13
    # (CUDA build, GBs). Install without deps and add its declared deps by hand.
    $V/bin/pip install --no-deps opennmt-py==3.5.1
    $V/bin/pip install configargparse "ctranslate2>=4,<5" "tensorboard>=2.3" flask waitress \
        "pyonmttok>=1.37,<2" pyyaml sacrebleu rapidfuzz pyahocorasick fasttext-wheel spacy six sacremoses
    ;;
  fairseq)
    # fairseq 0.12.2 is sdist-only and requires torchaudio (which pins its own torch) -> install without deps.
    # Build WITH pip's build isolation: with --no-build-isolation torch is importable at build time and setup.py
    # then tries to compile fairseq/clib/libbase/balanced_assignment.cpp, which is missing from the PyPI sdist
    # (ninja: error ... missing and no known rule to make it).
    # pip<24.1 because omegaconf 2.0.6 has metadata newer pip rejects; numpy<1.24 because of np.int/np.float.
    $V/bin/pip install "pip<24.1" "numpy<1.24" cython cffi "hydra-core>=1.0.7,<1.1" "omegaconf<2.1" regex \
        "sacrebleu>=1.4.12" tqdm bitarray sacremoses setuptools wheel
    $V/bin/pip install --no-deps fairseq==0.12.2
    # Python 3.11 dataclass incompatibility (fairseq + hydra-core 1.0.7): see patch_fairseq_py311.sh
    "$(dirname "$0")/patch_fairseq_py311.sh" $V
    ;;
  marian)
    # Marian 1.12 as PyPI ships it: one ~600 MB wheel whose `python -m pymarian train|decode|convert` is
    # Marian's own command line (CPU: MKL, fbgemm and intgemm, chosen at run time).
    $V/bin/pip install pymarian==1.12.42
    ;;
esac
$V/bin/pip freeze > $D/freeze.txt
} > $D/install.log 2>&1
rc=$?
end=$(date +%s.%N)
echo "install_seconds $(echo "$end - $start" | bc) rc $rc" > $D/install_time.txt
du -sh $V >> $D/install_time.txt
cat $D/install_time.txt
