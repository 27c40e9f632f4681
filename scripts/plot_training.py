#!/usr/bin/env python3
"""The training curve of a `tessera train --log CSV` run as a PNG: the training loss of
every step (light) and its moving mean, and the validation loss where it was measured.
Needs python3-matplotlib (Debian). Usage: scripts/plot_training.py LOG.csv OUT.png [TITLE]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    steps, loss, vsteps, vloss = [], [], [], []
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            steps.append(int(row["step"]))
            loss.append(float(row["loss"]))
            if row["val_loss"]:
                vsteps.append(int(row["step"]))
                vloss.append(float(row["val_loss"]))
    window = 20
    mean = [sum(loss[max(0, i - window + 1):i + 1]) / len(loss[max(0, i - window + 1):i + 1])
            for i in range(len(loss))]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(steps, loss, color="#9ecae1", linewidth=0.8, label="training loss (each step)")
    ax.plot(steps, mean, color="#08519c", linewidth=1.6, label=f"training loss ({window}-step mean)")
    ax.plot(vsteps, vloss, "o-", color="#d94801", markersize=3, label="validation loss (held-out slice)")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per token)")
    ax.set_title(sys.argv[3] if len(sys.argv) > 3 else "tessera train")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2])


if __name__ == "__main__":
    main()
