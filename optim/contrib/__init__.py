"""optax.contrib: optimizers and wrappers from recent papers, one private module per family."""
from optim.contrib._acprop import acprop, scale_by_acprop
from optim.contrib._ademamix import (ScaleByAdemamixState, ScaleBySimplifiedAdEMAMixState,
                                     ademamix, scale_by_ademamix, scale_by_simplified_ademamix,
                                     simplified_ademamix)
from optim.contrib._adopt import adopt, scale_by_adopt
from optim.contrib._cocob import COCOBState, cocob, scale_by_cocob
from optim.contrib._complex_valued import SplitRealAndImaginaryState, split_real_and_imaginary
from optim.contrib._dadapt_adamw import DAdaptAdamWState, dadapt_adamw
from optim.contrib._dog import DoGState, DoWGState, dog, dowg
from optim.contrib._galore import GaLoreDimensionNumbers, GaLoreState, galore, scale_by_galore
from optim.contrib._madgrad import MadgradState, madgrad, scale_by_madgrad
from optim.contrib._mechanic import MechanicState, mechanize
from optim.contrib._momo import MomoAdamState, MomoState, momo, momo_adam
from optim.contrib._muon import MuonDimensionNumbers, MuonState, muon, scale_by_muon
from optim.contrib._privacy import (DifferentiallyPrivateAggregateState,
                                    differentially_private_aggregate, dpsgd)
from optim.contrib._prodigy import ProdigyState, prodigy
from optim.contrib._reduce_on_plateau import ReduceLROnPlateauState, reduce_on_plateau
from optim.contrib._sam import NormalizeState, SAMState, normalize, sam
from optim.contrib._schedule_free import (ScheduleFreeState, schedule_free, schedule_free_adamw,
                                          schedule_free_eval_params, schedule_free_sgd)
from optim.contrib._sophia import (HutchinsonState, SophiaState,
                                   hutchinson_estimator_diag_hessian, sophia)
