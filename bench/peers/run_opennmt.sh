#!/bin/bash
# Usage: bench/peers/run_opennmt.sh [STEPS=40] [TAG=short] [ENC_HID=512] [DEC_HID=512]
# OpenNMT-py 3.5.1: build vocab, train RNNsearch, translate test (greedy + beam5), score.
set -u
BENCH_DIR=${BENCH_DIR:-$HOME/.cache/nmtkit-bench}
STEPS=${1:-40}; TAG=${2:-short}; ENC_HID=${3:-512}; DEC_HID=${4:-512}
P=$(cd "$(dirname "$0")" && pwd); V=$BENCH_DIR/opennmt/venv; W=$BENCH_DIR/opennmt/$TAG
export OMP_NUM_THREADS=${THREADS:-2} MKL_NUM_THREADS=${THREADS:-2} PYTHONWARNINGS=ignore
mkdir -p $W; cd $W
sed -e "s#@W@#$W#g; s#@BENCH_DIR@#$BENCH_DIR#g; s#@STEPS@#$STEPS#g; s#@ENC_HID@#$ENC_HID#; s#@DEC_HID@#$DEC_HID#" $P/configs/opennmt_rnnsearch.yaml > $W/cfg.yaml
S=$W/summary.txt
if [ "${SKIP_TRAIN:-0}" != 1 ]; then
: > $S; echo "threads $OMP_NUM_THREADS" >> $S
t0=$(date +%s.%N)
$V/bin/onmt_build_vocab -config $W/cfg.yaml -n_sample -1 > vocab.log 2>&1 || { echo "VOCAB FAILED"; tail vocab.log; exit 1; }
t1=$(date +%s.%N); echo "build_vocab_wall_s $(echo "$t1-$t0"|bc)" >> $S
wc -l vocab.src vocab.tgt | head -2 >> $S
echo "loadavg_before_train $(cat /proc/loadavg)" >> $S
t0=$(date +%s.%N)
/usr/bin/time -v $V/bin/onmt_train -config $W/cfg.yaml > train.log 2> train.time
rc=$?; t1=$(date +%s.%N)
[ $rc -ne 0 ] && { echo "TRAIN FAILED rc=$rc"; grep -v "^\s" train.time | tail -5; exit 1; }
echo "train_wall_s $(echo "$t1-$t0"|bc)" >> $S
grep -E "Maximum resident|User time|System time|Percent of CPU" train.time | sed "s/^/train /" >> $S
echo "loadavg_after_train $(cat /proc/loadavg)" >> $S
grep "tok/s" train.time train.log > speed.log
# OpenNMT logs src/tgt tok/s per report window (10 steps); skip first two windows (warm-up, = 20 steps)
grep -o "[0-9]*/ *[0-9]* tok/s" speed.log | awk -F'[/ ]+' 'NR>2{s+=$2; n++} END{printf "onmt_logged_tgt_tok_per_s_mean(steps>20) %.0f over %d windows\n", s/n, n}' >> $S
grep -o "Step[^;]*;.*sec;" speed.log >> $S
[ "${TRAIN_ONLY:-0}" = 1 ] && { cat $S; exit 0; }
fi
M=$(ls -t $W/model_step_*.pt | head -1); echo "checkpoint $M" >> $S
echo "translate_threads $OMP_NUM_THREADS" >> $S
# OpenNMT-py 3.5.1 checkpoints pickle vocab/opts objects; torch>=2.6 torch.load defaults to weights_only=True and
# onmt_translate fails with "Weights only load failed" -> opt out via torch's env switch (own, trusted checkpoint)
export TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
for B in 1 5; do
  t0=$(date +%s.%N); echo "translate_beam$B start_epoch $t0" >> $S
  /usr/bin/time -v $V/bin/onmt_translate -model $M -src $BENCH_DIR/data/test.en -output $W/test.hyp.beam$B \
     -beam_size $B -batch_size 80 -batch_type sents -max_length 100 -report_time > tr$B.log 2> tr$B.time
  t1=$(date +%s.%N)
  echo "translate_beam$B wall_s $(echo "$t1-$t0"|bc) sent_per_s $(echo "1000/($t1-$t0)"|bc -l | cut -c1-6)" >> $S
  grep -E "Maximum resident|User time|System time" tr$B.time | sed "s/^/translate_beam$B /" >> $S
  grep -h -i "total translation time\|average translation time\|sentences per second\|tokens per second" tr$B.log tr$B.time | sed "s/^/translate_beam$B onmt: /" >> $S
  echo "BLEU_beam$B $($BENCH_DIR/prep/bin/python $P/score.py $W/test.hyp.beam$B)" >> $S
done
cat $S
