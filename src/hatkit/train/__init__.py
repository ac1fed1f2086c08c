"""Training: dataset building and the three HAT stages (HSA-SFT, General OPD, HSA-RL)."""
