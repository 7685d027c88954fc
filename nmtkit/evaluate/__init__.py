"""Evaluation: BLEU and chrF of translations (sacreBLEU), their significance, and the NLL of
references under a model."""
