"""Parameter-shared IPPO for the CREW controller."""

from crewlib.rl.ippo import IPPOConfig, SharedActorCritic, gae, ippo_update, ppo_loss
from crewlib.rl.train import PolicyController, load_checkpoint, train

__all__ = ["IPPOConfig", "PolicyController", "SharedActorCritic", "gae", "ippo_update", "load_checkpoint",
           "ppo_loss", "train"]
