"""flax.training: train_state.TrainState, checkpoints, common_utils, early_stopping."""
