"""The compositor from Python (rawfx.Compositor over rawfx_compositor_*)."""
import numpy as np
import pytest

import rawfx


def picture(height, width, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(16, 236, (height, width), dtype=np.uint8)
    u = rng.integers(16, 241, ((height + 1) // 2, (width + 1) // 2), dtype=np.uint8)
    v = rng.integers(16, 241, ((height + 1) // 2, (width + 1) // 2), dtype=np.uint8)
    return y, u, v


@pytest.fixture
def registry():
    made = rawfx.Registry()
    yield made
    made.close()


def test_every_tile_is_its_input_scaled_alone_by_the_scale_filter(registry):
    comp = rawfx.Compositor(640, 360, fps=25, layout="grid", background="#000000")
    sizes = {"a": (240, 320), "b": (360, 640), "c": (144, 176), "d": (480, 270)}
    pictures = {}
    for seed, (name, (h, w)) in enumerate(sizes.items()):
        pictures[name] = picture(h, w, seed)
        # A view into a wider buffer: rows further apart than the width.
        y, u, v = pictures[name]
        wide = np.zeros((h, w + 40), np.uint8)
        wide[:, :w] = y
        comp.add_input(name).submit(wide[:, :w], u, v, time_us=0)
    y, u, v = comp.compose(2)
    assert comp.timestamp_us == 80_000
    tiles = comp.scene["tiles"]
    assert set(tiles) == set(sizes)
    for name, r in tiles.items():
        chain = registry.video_chain("scale=width=%d:height=%d:mode=fit" % (r["width"], r["height"]))
        ey, eu, ev = chain.process(*pictures[name])
        x0, y0, w, h = r["x"], r["y"], r["width"], r["height"]
        assert np.array_equal(y[y0:y0 + h, x0:x0 + w], ey), name
        assert np.array_equal(u[y0 // 2:(y0 + h) // 2, x0 // 2:(x0 + w) // 2], eu), name
        assert np.array_equal(v[y0 // 2:(y0 + h) // 2, x0 // 2:(x0 + w) // 2], ev), name
    # The same view objects next time, redrawn.
    again = comp.compose(3)
    assert again[0] is y
    comp.close()


def test_layouts_roles_placeholders_and_custom_tiles():
    comp = rawfx.Compositor(320, 180, fps=10, layout="speaker:filmstrip=bottom:others=2", placeholder=(255, 255, 255),
                            timeout=0.25)
    for name in ("a", "b", "c"):
        comp.add_input(name)
    comp.set_roles(speaker="c")
    y, _, _ = comp.compose(0)
    tiles = comp.scene["tiles"]
    assert tiles["c"] == {"x": 0, "y": 0, "width": 320, "height": 144, "z": 0}
    # No frame yet: white placeholders (limited range: Y 235).
    assert int(y[10, 10]) == 235
    comp.set_layout([{"id": "a", "x": 0, "y": 0, "width": 160, "height": 90, "z": 1},
                     {"id": "b", "x": 80, "y": 44, "width": 160, "height": 90}])
    comp.compose(1)
    assert comp.scene["layout"] == "custom"
    assert comp.scene["tiles"]["a"]["z"] == 1
    comp.remove_input("b")
    comp.compose(2)
    assert set(comp.scene["tiles"]) == {"a"}
    comp.close()


def test_bad_arguments_are_refused_with_their_reason():
    with pytest.raises(rawfx.RawFXError, match="output size 641x360"):
        rawfx.Compositor(641, 360)
    with pytest.raises(rawfx.RawFXError, match="layout 'mosaic'"):
        rawfx.Compositor(640, 360, layout="mosaic")
    with pytest.raises(ValueError, match="background"):
        rawfx.Compositor(640, 360, background="blue-ish")
    comp = rawfx.Compositor(64, 64)
    comp.add_input("a")
    with pytest.raises(rawfx.RawFXError, match="already exists"):
        comp.add_input("a")
    with pytest.raises(rawfx.RawFXError, match="must be even"):
        comp.set_layout([{"id": "a", "x": 1, "y": 0, "width": 4, "height": 4}])
    with pytest.raises(rawfx.RawFXError, match="frame_index is -1"):
        comp.compose(-1)
    with pytest.raises(ValueError, match="does not fit"):
        comp.compose(2**64)
    comp.close()


def test_overlays_and_a_tiles_border_draw_on_their_tile_and_the_program(registry):
    """A tile's overlay turns only its tile (rows and columns reversed, numpy as reference), a
    tile's own border is its colour, the program overlay turns the whole picture, and a
    parameter set on the overlay's chain reaches the compositor."""
    plain = rawfx.Compositor(640, 360, layout="grid", fit="cover", background="#000000", timeout=60)
    decorated = rawfx.Compositor(640, 360, layout="grid", fit="cover", background="#000000", timeout=60)
    turn = registry.video_chain("rotate=angle=180")
    pictures = {"a": picture(180, 320, 1), "b": picture(240, 320, 2)}
    for comp in (plain, decorated):
        overlay = turn if comp is decorated else None
        border = (4, (255, 255, 255)) if comp is decorated else None
        comp.add_input("a", overlay=overlay).submit(*pictures["a"], time_us=0)
        comp.add_input("b", border=border).submit(*pictures["b"], time_us=0)
    py, pu, pv = plain.compose(0, copy=True)
    y, u, v = decorated.compose(0, copy=True)
    tiles = decorated.scene["tiles"]
    a, b = tiles["a"], tiles["b"]
    ay, ax, ah, aw = a["y"], a["x"], a["height"], a["width"]
    assert np.array_equal(y[ay:ay + ah, ax:ax + aw], py[ay:ay + ah, ax:ax + aw][::-1, ::-1])
    assert np.array_equal(u[ay // 2:(ay + ah) // 2, ax // 2:(ax + aw) // 2],
                          pu[ay // 2:(ay + ah) // 2, ax // 2:(ax + aw) // 2][::-1, ::-1])
    by, bx, bh, bw = b["y"], b["x"], b["height"], b["width"]
    assert (y[by:by + 4, bx:bx + bw] == 235).all()  # white, limited range
    assert np.array_equal(y[by + 4:by + bh - 4, bx + 4:bx + bw - 4], py[by + 4:by + bh - 4, bx + 4:bx + bw - 4])
    program = registry.video_chain("rotate=angle=180")
    decorated.set_overlay(program)
    turned = decorated.compose(1, copy=True)[0]
    assert np.array_equal(turned, y[::-1, ::-1])
    program.set_parameter("rotate.angle", "0")
    assert np.array_equal(decorated.compose(2, copy=True)[0], y)
    decorated.set_overlay(None)
    with pytest.raises(TypeError):
        decorated.add_input("c", overlay="text=text=x")
    with pytest.raises(rawfx.RawFXError, match="border of 3 pixels"):
        decorated.add_input("c", border=(3, 0xFFFFFF))
    for comp in (plain, decorated):
        comp.close()
