#!/bin/bash
# Usage: bench/peers/run_joeynmt.sh [UPDATES=300] [TAG=short] [VALID_FREQ=100000]
# Train joeynmt 2.3.0 RNNsearch on $BENCH_DIR/data, then translate test (greedy + beam5) and score.
# Everything goes to $BENCH_DIR/joeynmt/<TAG>/ ; summary appended to $BENCH_DIR/joeynmt/<TAG>/summary.txt
set -u
BENCH_DIR=${BENCH_DIR:-$HOME/.cache/nmtkit-bench}
UPDATES=${1:-300}; TAG=${2:-short}; VALID_FREQ=${3:-100000}
P=$(cd "$(dirname "$0")" && pwd); V=$BENCH_DIR/joeynmt/venv; W=$BENCH_DIR/joeynmt/$TAG
export OMP_NUM_THREADS=${THREADS:-2} MKL_NUM_THREADS=${THREADS:-2} PYTHONWARNINGS=ignore
mkdir -p $W; cd $W
mk_cfg() { sed -e "s#@UPDATES@#$UPDATES#; s#@BENCH_DIR@#$BENCH_DIR#g; s#@MODEL_DIR@#$W/model#; s#@VALID_FREQ@#$VALID_FREQ#; s#@BEAM@#$1#" \
  $P/configs/joeynmt_rnnsearch.yaml > $W/cfg_beam$1.yaml; }
mk_cfg 1; mk_cfg 5
S=$W/summary.txt
if [ "${SKIP_TRAIN:-0}" != 1 ]; then
: > $S; echo "threads $OMP_NUM_THREADS" >> $S
echo "loadavg_before_train $(cat /proc/loadavg)" >> $S
# ---- train (vocab is built by joeynmt itself from train data: voc_limit 30000, min_freq 1)
t0=$(date +%s.%N)
/usr/bin/time -v $V/bin/python -m joeynmt train $W/cfg_beam5.yaml --skip-test > train.stdout 2> train.time
rc=$?; t1=$(date +%s.%N)
[ $rc -ne 0 ] && { echo "TRAIN FAILED rc=$rc"; tail -5 train.time; exit 1; }
echo "train_wall_s $(echo "$t1-$t0"|bc)" >> $S
grep -E "Maximum resident|User time|System time|Percent of CPU" train.time | sed "s/^/train /" >> $S
echo "loadavg_after_train $(cat /proc/loadavg)" >> $S
grep "Tokens per Sec" model/train.log > speed.log
# joeynmt logs target tokens/s per 10-step window (excl. validation); skip first two windows (warm-up = 20 steps)
awk -F'Tokens per Sec:' 'NR>2{split($2,a,","); s+=a[1]; n++} END{printf "joey_logged_trg_tok_per_s_mean(steps>20) %.0f over %d windows\n", s/n, n}' speed.log >> $S
[ "${TRAIN_ONLY:-0}" = 1 ] && { cat $S; exit 0; }
fi
echo "translate_threads $OMP_NUM_THREADS" >> $S
# ---- translate test (greedy, beam5), wall clock incl. python start + model load
# (joeynmt 2.3.0 `translate -o FILE` crashes after decoding: AttributeError BaseConfig has no n_best -> use stdout)
for B in 1 5; do
  t0=$(date +%s.%N); echo "translate_beam$B start_epoch $t0" >> $S
  /usr/bin/time -v $V/bin/python -m joeynmt translate $W/cfg_beam$B.yaml < $BENCH_DIR/data/test.en > $W/test.hyp.beam$B 2> tr$B.time
  t1=$(date +%s.%N)
  echo "translate_beam$B wall_s $(echo "$t1-$t0"|bc) sent_per_s $(echo "1000/($t1-$t0)"|bc -l | cut -c1-6)" >> $S
  grep -E "Maximum resident|User time|System time" tr$B.time | sed "s/^/translate_beam$B /" >> $S
  grep -E "Generation took" $W/model/translate.log | tail -1 | sed "s/^.*Generation/translate_beam$B joey: Generation/" >> $S
  grep -E "Ready to decode" $W/model/translate.log | tail -1 | cut -c1-23 | sed "s/^/translate_beam$B ready_to_decode_at /" >> $S
  echo "BLEU_beam$B $($BENCH_DIR/prep/bin/python $P/score.py $W/test.hyp.beam$B)" >> $S
done
cat $S
