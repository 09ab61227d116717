"""Contains all the data models used in inputs/outputs"""

from .albic_params import AlbicParams
from .albic_params_backend import AlbicParamsBackend
from .albic_params_pairs import AlbicParamsPairs
from .algorithm_catalog import AlgorithmCatalog
from .algorithm_info import AlgorithmInfo
from .algorithm_info_parameters import AlgorithmInfoParameters
from .assignment_request import AssignmentRequest
from .budget import Budget
from .clb_params import ClbParams
from .clb_params_variant import ClbParamsVariant
from .cola_params import ColaParams
from .correlation_global_params import CorrelationGlobalParams
from .correlation_global_params_variant import CorrelationGlobalParamsVariant
from .correlation_pairwise_params import CorrelationPairwiseParams
from .correlation_pairwise_params_variant import CorrelationPairwiseParamsVariant
from .elb_params import ElbParams
from .elb_params_variant import ElbParamsVariant
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
    "AlbicParams",
    "AlbicParamsBackend",
    "AlbicParamsPairs",
    "AlgorithmCatalog",
    "AlgorithmInfo",
    "AlgorithmInfoParameters",
    "AssignmentRequest",
    "Budget",
    "ClbParams",
    "ClbParamsVariant",
    "ColaParams",
    "CorrelationGlobalParams",
    "CorrelationGlobalParamsVariant",
    "CorrelationPairwiseParams",
    "CorrelationPairwiseParamsVariant",
    "ElbParams",
    "ElbParamsVariant",
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
