"""The CREW environment: workspace, actions, observation, reward, executors, PettingZoo env."""

from crewlib.actions import Action
from crewlib.env.crew_env import CrewEnv, EnvConfig
from crewlib.env.executors import ActionRequest, Executor, SurrogateErrors, SurrogateExecutor
from crewlib.env.observation import FEATURE_NAMES
from crewlib.env.workspace import Workspace

__all__ = ["Action", "ActionRequest", "CrewEnv", "EnvConfig", "Executor", "FEATURE_NAMES", "SurrogateErrors",
           "SurrogateExecutor", "Workspace"]
