"""Contains all the data models used in inputs/outputs"""

from .algorithm_catalog import AlgorithmCatalog
from .algorithm_info import AlgorithmInfo
from .algorithm_info_parameters import AlgorithmInfoParameters
from .assignment_request import AssignmentRequest
from .budget import Budget
from .clb_params import ClbParams
from .correlation_global_params import CorrelationGlobalParams
from .correlation_pairwise_params import CorrelationPairwiseParams
from .correlation_pairwise_params_variant import CorrelationPairwiseParamsVariant
from .elb_params import ElbParams
from .field_error import FieldError
from .flux_params import FluxParams
from .largest_load_first_params import LargestLoadFirstParams
from .lower_bound import LowerBound
from .milp_params import MilpParams
from .milp_params_backend import MilpParamsBackend
from .model_connection import ModelConnection
from .move import Move
from .node import Node
from .node_resources import NodeResources
from .operations_healthz_response_operations_healthz import OperationsHealthzResponseOperationsHealthz
from .plan_response import PlanResponse
from .plan_response_assignment import PlanResponseAssignment
from .plan_response_status import PlanResponseStatus
from .plan_stats import PlanStats
from .problem import Problem
from .random_params import RandomParams
from .round_robin_params import RoundRobinParams
from .scaling import Scaling
from .splitter_connection import SplitterConnection
from .splitter_model import SplitterModel
from .splitter_request import SplitterRequest
from .splitter_request_clustering import SplitterRequestClustering
from .splitter_response import SplitterResponse
from .splitter_response_weights import SplitterResponseWeights
from .traffic import Traffic
from .unit import Unit
from .unit_resources import UnitResources
from .universal_hash_params import UniversalHashParams

__all__ = (
    "AlgorithmCatalog",
    "AlgorithmInfo",
    "AlgorithmInfoParameters",
    "AssignmentRequest",
    "Budget",
    "ClbParams",
    "CorrelationGlobalParams",
    "CorrelationPairwiseParams",
    "CorrelationPairwiseParamsVariant",
    "ElbParams",
    "FieldError",
    "FluxParams",
    "LargestLoadFirstParams",
    "LowerBound",
    "MilpParams",
    "MilpParamsBackend",
    "ModelConnection",
    "Move",
    "Node",
    "NodeResources",
    "OperationsHealthzResponseOperationsHealthz",
    "PlanResponse",
    "PlanResponseAssignment",
    "PlanResponseStatus",
    "PlanStats",
    "Problem",
    "RandomParams",
    "RoundRobinParams",
    "Scaling",
    "SplitterConnection",
    "SplitterModel",
    "SplitterRequest",
    "SplitterRequestClustering",
    "SplitterResponse",
    "SplitterResponseWeights",
    "Traffic",
    "Unit",
    "UnitResources",
    "UniversalHashParams",
)
