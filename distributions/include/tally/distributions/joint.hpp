// Joint laws of k coupled counts in one include: the table, its algebra, children of coordinates, conditioning.
#pragma once

#include "tally/distributions/joint_algebra.hpp"
#include "tally/distributions/joint_child_laws.hpp"
#include "tally/distributions/joint_condition.hpp"
#include "tally/distributions/joint_pmf.hpp"
