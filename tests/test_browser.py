"""The page of nmtkit serve in a real headless browser (Debian's chromium driven by selenium):
it loads, a sentence typed in comes back translated, the heatmap is drawn. `make test-browser`
installs both and runs this test; elsewhere it is skipped, saying why."""

import json
import shutil
import urllib.request

import pytest

from tests.conftest import EN
from tests.test_serve import fake_server, server  # noqa: F401  (fixtures: servers on free loopback ports)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (make test-browser)")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    DRIVER is None or not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="no chromium and chromedriver here (make test-browser installs them)",
)


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def test_the_page_translates_what_is_typed_and_draws_the_attention(server, browser):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    url, _ = server
    browser.get(url + "/")
    assert browser.title == "nmtkit"
    # the beam's field bounded as the server bounds a request's (it said 24, whatever --max-beam)
    info = json.loads(urllib.request.urlopen(url + "/info", timeout=30).read())
    beam = browser.find_element(By.ID, "beam")
    WebDriverWait(browser, 30).until(lambda _: beam.get_attribute("max") == str(info["limits"]["max_beam"]))
    assert beam.get_attribute("value") == str(min(info["default_beam"], info["limits"]["max_beam"]))
    box = browser.find_element(By.ID, "text")
    box.clear()
    box.send_keys(EN[3])
    browser.find_element(By.ID, "go").click()
    WebDriverWait(browser, 60).until(ready.presence_of_element_located((By.CSS_SELECTOR, ".sent .translation")))
    text = browser.find_element(By.CSS_SELECTOR, ".sent .translation").text
    assert text.strip()
    heatmap = browser.find_element(By.CSS_SELECTOR, "canvas.heatmap")
    size = browser.execute_script("return [arguments[0].width, arguments[0].height]", heatmap)
    assert size[0] > 50 and size[1] > 50
    # something was painted: some pixel of the grid is not blank
    painted = browser.execute_script(
        """
        const c = arguments[0], d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let dark = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] < 128) dark++;
        return dark;""",
        heatmap,
    )
    assert painted > 100
    # hovering a target word colours the source words by its attention
    from selenium.webdriver import ActionChains

    word = browser.find_element(By.CSS_SELECTOR, ".words.tgt span")
    ActionChains(browser).move_to_element(word).perform()
    shades = [
        s.value_of_css_property("background-color") for s in browser.find_elements(By.CSS_SELECTOR, ".words.src span")
    ]
    assert any(s not in ("rgba(0, 0, 0, 0)", "transparent") for s in shades)


def test_for_a_model_without_attention_the_page_shows_translations_alone(fake_server, browser):  # noqa: F811
    """It asked every model for the attention, which one without it refuses (422)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    url, translator, _ = fake_server
    translator.attends = False
    try:
        browser.get(url + "/")
        WebDriverWait(browser, 30).until(ready.text_to_be_present_in_element((By.ID, "status"), "no attention"))
        box = browser.find_element(By.ID, "text")
        box.clear()
        box.send_keys("a b c")
        browser.find_element(By.ID, "go").click()
        WebDriverWait(browser, 60).until(ready.presence_of_element_located((By.CSS_SELECTOR, ".sent .translation")))
        assert browser.find_element(By.CSS_SELECTOR, ".sent .translation").text == "a b c"  # the fake echoes
        assert not browser.find_elements(By.CSS_SELECTOR, "canvas.heatmap")
        assert not browser.find_element(By.ID, "pieces").is_displayed()  # no heatmap to draw in pieces
    finally:
        translator.attends = True
