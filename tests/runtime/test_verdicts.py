"""The window verdicts on measured masses: (mass, exact) per loss node per backward."""

from accumlint.runtime.verdicts import modal_size, strictly_growing, weigh_window


def window(*weights, exact=True):
    return [[(w, exact)] for w in weights]


def test_divided_window_is_ok():
    assert weigh_window(window(0.25, 0.25, 0.25, 0.25), 4).kind == "ok"


def test_undivided_window():
    verdict = weigh_window(window(1.0, 1.0, 1.0, 1.0), 4)
    assert (verdict.kind, verdict.weight_sum, verdict.k) == ("undivided", 4.0, 4)


def test_label_smoothing_weight_still_counts_as_undivided():
    assert weigh_window(window(0.9, 0.9, 0.9, 0.9), 4).kind == "undivided"


def test_divided_twice_is_overdivided():
    verdict = weigh_window(window(*[1 / 16] * 4), 4)
    assert (verdict.kind, verdict.divisor) == ("overdivided", 16)


def test_wrong_divisor_below_k_is_underdivided():
    verdict = weigh_window(window(0.5, 0.5, 0.5, 0.5), 4)
    assert (verdict.kind, verdict.divisor) == ("underdivided", 2)


def test_several_terms_per_backward_are_weighed_by_their_sum():
    per_token = [[(1 / 6, True)] * 6 for _ in range(2)]  # token means / T, undivided by k
    assert weigh_window(per_token, 2).kind == "undivided"
    divided = [[(1 / 12, True)] * 6 for _ in range(2)]
    assert weigh_window(divided, 2).kind == "ok"


def test_aux_loss_dominant_term_decides():
    aux = [[(0.25, True), (0.025, True)] for _ in range(4)]
    assert weigh_window(aux, 4).kind == "ok"


def test_no_verdict_when_it_cannot_tell():
    assert weigh_window(window(1.0), 1) is None  # no accumulation
    assert weigh_window(window(1.0, 1.0, exact=False), 2) is None  # a sum without a unit
    assert weigh_window([[(0.25, True)], []], 2) is None  # an unmeasured backward
    # per-token backward passes divided by k only: several backward passes per micro-batch
    assert weigh_window(window(*[0.5] * 12), 2) is None


def test_modal_size_prefers_full_windows():
    assert modal_size([4, 4, 3, 4, 4, 3]) == 4
    assert modal_size([3, 4]) == 4
    assert modal_size([]) is None


def test_strictly_growing():
    assert strictly_growing([1, 2, 3])
    assert not strictly_growing([1, 2, 2])
    assert not strictly_growing([5, 6])
