#!/bin/bash
# Usage: bench/peers/run_fairseq.sh [UPDATES=40] [TAG=short]
# fairseq 0.12.2 (+ py3.11 dataclass shim, see patch_fairseq_py311.sh): binarize, train lstm (bi-LSTM enc,
# LSTM dec, attention), generate test greedy + beam5, score.
set -u
BENCH_DIR=${BENCH_DIR:-$HOME/.cache/nmtkit-bench}
UPDATES=${1:-40}; TAG=${2:-short}
P=$(cd "$(dirname "$0")" && pwd); V=$BENCH_DIR/fairseq/venv; W=$BENCH_DIR/fairseq/$TAG
export OMP_NUM_THREADS=${THREADS:-2} MKL_NUM_THREADS=${THREADS:-2} PYTHONWARNINGS=ignore
mkdir -p $W; cd $W
S=$W/summary.txt
if [ "${SKIP_TRAIN:-0}" != 1 ]; then
: > $S; echo "threads $OMP_NUM_THREADS" >> $S
t0=$(date +%s.%N)
$V/bin/fairseq-preprocess --source-lang en --target-lang fr --trainpref $BENCH_DIR/data/train \
  --validpref $BENCH_DIR/data/valid --testpref $BENCH_DIR/data/test --destdir $W/bin \
  --nwordssrc 30000 --nwordstgt 30000 --workers 2 > prep.log 2>&1 || { echo PREP FAILED; tail prep.log; exit 1; }
t1=$(date +%s.%N); echo "preprocess_wall_s $(echo "$t1-$t0"|bc)" >> $S
wc -l $W/bin/dict.en.txt $W/bin/dict.fr.txt | head -2 >> $S
echo "loadavg_before_train $(cat /proc/loadavg)" >> $S
t0=$(date +%s.%N)
/usr/bin/time -v $V/bin/fairseq-train $W/bin --task translation --source-lang en --target-lang fr \
  --arch lstm --encoder-bidirectional --encoder-layers 1 --decoder-layers 1 \
  --encoder-embed-dim 256 --encoder-hidden-size 256 --decoder-embed-dim 256 --decoder-hidden-size 256 \
  --decoder-out-embed-dim 256 --decoder-attention 1 \
  --dropout 0 --encoder-dropout-in 0 --encoder-dropout-out 0 --decoder-dropout-in 0 --decoder-dropout-out 0 \
  --optimizer adam --adam-betas '(0.9,0.999)' --lr 0.001 --lr-scheduler fixed --criterion cross_entropy \
  --batch-size 80 --max-update $UPDATES --max-source-positions 50 --max-target-positions 50 \
  --skip-invalid-size-inputs-valid-test --disable-validation --no-epoch-checkpoints \
  --save-dir $W/ckpt --seed 42 --cpu --log-format simple --log-interval 10 > train.log 2> train.time
rc=$?; t1=$(date +%s.%N)
[ $rc -ne 0 ] && { echo "TRAIN FAILED rc=$rc"; grep -v "^\s" train.time | tail -5; tail -5 train.log; exit 1; }
echo "train_wall_s $(echo "$t1-$t0"|bc)" >> $S
grep -E "Maximum resident|User time|System time|Percent of CPU" train.time | sed "s/^/train /" >> $S
echo "loadavg_after_train $(cat /proc/loadavg)" >> $S
# fairseq logs wps (target tokens/s incl. EOS) per 10-update window; skip first two windows (warm-up = 20 updates)
grep -h "wps=" train.log train.time | grep -v "train |\| epoch 0*[0-9]* | valid" > speed.log
grep -o "wps=[0-9.]*" speed.log | awk -F= 'NR>2{s+=$2; n++} END{printf "fairseq_logged_wps_mean(updates>20) %.0f over %d windows\n", s/n, n}' >> $S
grep -h "wps=" train.log train.time >> $S
[ "${TRAIN_ONLY:-0}" = 1 ] && { cat $S; exit 0; }
fi
echo "translate_threads $OMP_NUM_THREADS" >> $S
# fairseq 0.12.2 checkpoints pickle argparse Namespace etc.; torch>=2.6 torch.load defaults to weights_only=True ->
# "Weights only load failed" -> opt out via torch's env switch (own, trusted checkpoint)
export TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
# the 50-token train limit is stored in the model; without the override generate refuses test sentences whose
# *reference* is >50 tokens and caps output at 49 tokens
for B in 1 5; do
  t0=$(date +%s.%N); echo "translate_beam$B start_epoch $t0" >> $S
  /usr/bin/time -v $V/bin/fairseq-generate $W/bin --path $W/ckpt/checkpoint_last.pt --gen-subset test \
     --source-lang en --target-lang fr --beam $B --batch-size 80 --max-len-a 0 --max-len-b 100 --cpu \
     --model-overrides "{'max_source_positions':1024,'max_target_positions':1024}" > gen$B.out 2> tr$B.time
  t1=$(date +%s.%N)
  echo "translate_beam$B wall_s $(echo "$t1-$t0"|bc) sent_per_s $(echo "1000/($t1-$t0)"|bc -l | cut -c1-6)" >> $S
  grep -E "Maximum resident|User time|System time" tr$B.time | sed "s/^/translate_beam$B /" >> $S
  grep -h "Translated" gen$B.out tr$B.time | sed "s/^/translate_beam$B fairseq: /" >> $S
  grep "^H-" gen$B.out | sed 's/^H-//' | sort -n -k1,1 | cut -f3 > $W/test.hyp.beam$B
  echo "BLEU_beam$B $($BENCH_DIR/prep/bin/python $P/score.py $W/test.hyp.beam$B)" >> $S
done
cat $S
