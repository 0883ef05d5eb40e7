"""The z3 kernel's three modes on hand-made problems, and the bound products it reports."""

from __future__ import annotations

import pytest

from iclr26.dexploration.kernel import Z3Kernel
from iclr26.dexploration.logic import fact

H1, H2 = fact("x <= 2"), fact("- y <= - 1")
PRODUCT = fact("x * y - x - 2 * y <= - 2")  # (2 - x)(y - 1) >= 0


def test_modes_on_a_product_step():
    assert Z3Kernel(mode="full").entails([H1, H2], PRODUCT).proved is True
    # with x*y an opaque atom, no linear combination of h1, h2 bounds it
    assert Z3Kernel(mode="linear").entails([H1, H2], PRODUCT).proved is False
    ans = Z3Kernel(mode="products").entails([H1, H2], PRODUCT)
    assert ans.proved is True and ans.used == (0, 1) and ans.products == (((0, 1), (1, 1)),)


def test_products_mode_multiplies_both_bounds_of_an_equation():
    # x + y = 3 gives x + y - 3 >= 0 and 3 - x - y >= 0; with x <= 2: (2 - x)(x + y - 3) >= 0 and
    # (2 - x)(3 - x - y) >= 0, so (2 - x)(x + y - 3) = 0:  -x^2 - x y + 5 x + 2 y = 6
    eq = fact("x + y = 3")
    goal = fact("- x * x - x * y + 5 * x + 2 * y = 6")
    ans = Z3Kernel(mode="products").entails([H1, eq], goal)
    assert ans.proved is True and {((0, 1), (1, 1)), ((0, 1), (1, -1))} <= set(ans.products)


def test_products_mode_is_weaker_than_full_where_nia_is():
    # x (x + y - 3) = 0 needs the equation times the variable x, which is no product of two bounds
    eq = fact("x + y = 3")
    goal = fact("x * x + x * y - 3 * x = 0")
    assert Z3Kernel(mode="full").entails([eq], goal).proved is True
    assert Z3Kernel(mode="products").entails([eq], goal).proved is False


def test_satisfiable_and_bad_arguments():
    k = Z3Kernel()
    assert k.satisfiable([H1, H2]) is True
    assert k.satisfiable([H1, fact("- x <= - 3")]) is False  # x <= 2 and x >= 3
    assert k.queries == 2
    with pytest.raises(ValueError, match="mode"):
        Z3Kernel(mode="lean")
    with pytest.raises(ValueError, match="rlimit"):
        Z3Kernel(rlimit=0)
    with pytest.raises(ValueError, match="only sign"):
        H1.bound(-1)
