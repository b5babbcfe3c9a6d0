"""Parameter-shared IPPO for the CREW controller: the algorithm, training, the trained controller."""

from crewlib.rl.controller import ControllerError, PolicyController, build_network, controller_path, read_checkpoint
from crewlib.rl.ippo import IPPOConfig, SharedActorCritic, gae, ippo_update, ppo_loss
from crewlib.rl.train import build_training_env, train

__all__ = ["ControllerError", "IPPOConfig", "PolicyController", "SharedActorCritic", "build_network",
           "build_training_env", "controller_path", "gae", "ippo_update", "ppo_loss", "read_checkpoint", "train"]
