"""HuggingFace Transformers in a trial: a tiny GPT-2 trained by `transformers.Trainer`, ASHA-tuned.

The guide's workflow 2 with Ray 2.60's names (the guide's `TransformersTrainer` is gone): every
worker of a trial builds an ordinary `transformers.Trainer` and hands it to Ray Train with two
helpers from `ray.train.huggingface.transformers`:

- `prepare_trainer(trainer)` readies the Trainer for Ray Train (Ray Data inputs, if any);
- `RayTrainReportCallback()` reports, at every Trainer save, the Trainer's logged metrics and
  its checkpoint through `ray.train.report`. Evaluation and saving both run once per epoch, so
  every report carries that epoch's `eval_loss`, the metric ASHA ranks the trials by.

With more than one worker per trial the Trainer runs distributed data parallel over Ray Train's
process group. Everything is offline: the model is a 2-layer GPT-2 built from a `GPT2Config`
(no download) and the corpus is generated sentences with a character-level vocabulary.
ASHA searches the learning rate and the warmup (a fraction of the training steps).

Needs the `hf` extra: `pip install 'sweeplab[hf]'`.

    sweeplab sweep experiments/transformers_gpt2.py                    # 4 trials x 2 workers
    GPT2_EPOCHS=20 GPT2_SENTENCES=20000 GPT2_EMBED=128 GPT2_LAYERS=4 \
        sweeplab sweep experiments/transformers_gpt2.py --num-trials 16

Settings: `GPT2_EPOCHS` (default 6), `GPT2_WORKERS` (workers per trial, default 2),
`GPT2_CPUS_PER_WORKER` (default 1), `GPT2_SENTENCES` (corpus size, default 2000),
`GPT2_EMBED` / `GPT2_LAYERS` (model size, default 32 / 2), `GPT2_USE_GPU=1`, `--num-trials`
(default 4).
"""

import math
import os
import tempfile

import _data
import torch
from ray import train

import sweeplab
from sweeplab import loguniform, uniform

try:
    import transformers
    from ray.train.huggingface.transformers import RayTrainReportCallback, prepare_trainer
except ImportError as exc:  # transformers is the optional `hf` extra
    raise ImportError(
        f"this experiment needs HuggingFace Transformers ({exc}); pip install 'sweeplab[hf]'"
    ) from None

EPOCHS = _data.env_int("GPT2_EPOCHS", 6)
WORKERS = _data.env_int("GPT2_WORKERS", 2)
CPUS_PER_WORKER = _data.env_float("GPT2_CPUS_PER_WORKER", 1.0)
USE_GPU = os.environ.get("GPT2_USE_GPU", "") == "1"
SENTENCES = _data.env_int("GPT2_SENTENCES", 2000)
EMBED = _data.env_int("GPT2_EMBED", 32)
LAYERS = _data.env_int("GPT2_LAYERS", 2)
BLOCK = 64  # characters per training sequence


class CharBlocks(torch.utils.data.Dataset):
    """Consecutive `BLOCK`-character windows of the encoded corpus, as causal-LM examples."""

    def __init__(self, ids: list[int]) -> None:
        usable = len(ids) // BLOCK * BLOCK
        self.blocks = torch.tensor(ids[:usable]).view(-1, BLOCK)

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, index: int) -> dict:
        block = self.blocks[index]
        return {"input_ids": block, "labels": block}  # GPT-2 shifts the labels itself


def train_func(config):
    text = _data.synthetic_text(SENTENCES, seed=0)
    tokenizer = _data.CharTokenizer(text)
    ids = tokenizer.encode(text)
    split = int(len(ids) * 0.9)
    train_set, eval_set = CharBlocks(ids[:split]), CharBlocks(ids[split:])

    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=tokenizer.vocab_size,
            n_positions=BLOCK,
            n_embd=EMBED,
            n_layer=LAYERS,
            n_head=2,
        )
    )
    world_size = train.get_context().get_world_size()
    steps = EPOCHS * math.ceil(len(train_set) / (config["batch_size"] * world_size))
    with tempfile.TemporaryDirectory(prefix="gpt2-") as output_dir:
        args = transformers.TrainingArguments(
            output_dir=output_dir,  # the Trainer's own checkpoints; Ray keeps copies
            num_train_epochs=EPOCHS,
            per_device_train_batch_size=config["batch_size"],
            per_device_eval_batch_size=64,
            learning_rate=config["lr"],
            warmup_steps=int(config["warmup"] * steps),  # `warmup` is a fraction of all steps
            weight_decay=config["weight_decay"],
            eval_strategy="epoch",  # evaluate and save together, so every report has eval_loss
            save_strategy="epoch",
            logging_strategy="epoch",
            save_total_limit=1,
            use_cpu=not USE_GPU,
            report_to="none",
            disable_tqdm=True,
            seed=0,
        )
        trainer = transformers.Trainer(
            model=model,
            args=args,
            train_dataset=train_set,
            eval_dataset=eval_set,
            callbacks=[RayTrainReportCallback()],
        )
        trainer = prepare_trainer(trainer)

        checkpoint = train.get_checkpoint()
        if checkpoint:  # a retry or a resumed sweep: continue the Trainer's own checkpoint
            with checkpoint.as_directory() as folder:
                name = RayTrainReportCallback.CHECKPOINT_NAME
                trainer.train(resume_from_checkpoint=os.path.join(folder, name))
        else:
            trainer.train()


sweep = sweeplab.Sweep(
    name="transformers_gpt2",
    train_func=train_func,
    space={
        "lr": loguniform(3e-4, 1e-2),
        "warmup": uniform(0.0, 0.3),
        "weight_decay": loguniform(1e-4, 1e-1),
        "batch_size": 32,
    },
    metric="eval_loss",
    mode="min",
    searcher="random",
    scheduler="asha",
    num_trials=4,
    max_iterations=EPOCHS,
    workers_per_trial=WORKERS,
    cpus_per_worker=CPUS_PER_WORKER,
    use_gpu=USE_GPU,
    checkpoints_to_keep=1,
    seed=0,
)
