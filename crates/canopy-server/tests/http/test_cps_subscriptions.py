"""CPS notification subscriptions over `canopy serve` (cps-rest OpenAPI
cpsAdminV2.yml `notificationSubscription`: GET, POST and DELETE of
/v2/notification-subscription?xpath=...), kept as CPS keeps them: data of the
anchor cps-notification-subscriptions in the dataspace CPS-Admin."""

from __future__ import annotations

import pytest
import requests

from cps_support import Cps, assert_cps_error, start

SUBS = "/v2/notification-subscription"
TOP = "cps-notification-subscriptions:dataspaces"

# The request sample of CPS's OpenAPI (components.yml).
SAMPLE = {
    "dataspace": [
        {
            "name": "my-dataspace",
            "anchors": {"anchor": [{"name": "my-anchor", "xpaths": {"xpath": [{"path": "/shops/bookstore"}]}}]},
        }
    ]
}
MY_DS = "/dataspaces/dataspace[@name='my-dataspace']"
MY_ANCHOR = MY_DS + "/anchors/anchor[@name='my-anchor']"


@pytest.fixture
def cps(tmp_path):
    srv = start(tmp_path)
    yield Cps(srv)
    assert srv.stop() == 0, srv.stderr_tail()


def post(cps: Cps, xpath: str, body) -> requests.Response:
    return cps.send("POST", SUBS, body, params={"xpath": xpath})


def get(cps: Cps, xpath: str) -> requests.Response:
    return cps.req("GET", SUBS, params={"xpath": xpath})


def delete(cps: Cps, xpath: str) -> requests.Response:
    return cps.req("DELETE", SUBS, params={"xpath": xpath})


def test_none_yet(cps):
    r = get(cps, "/dataspaces")
    assert r.status_code == 200, r.text
    assert r.json() == [{TOP: {}}]


def test_create_get_delete(cps):
    r = post(cps, "/dataspaces", SAMPLE)
    assert r.status_code == 201 and r.text == "", r.text
    want_anchor = {"name": "my-anchor", "xpaths": {"xpath": [{"path": "/shops/bookstore"}]}}
    assert get(cps, "/dataspaces").json() == [
        {TOP: {"dataspace": [{"name": "my-dataspace", "anchors": {"anchor": [want_anchor]}}]}}
    ]
    assert get(cps, MY_ANCHOR).json() == [{"cps-notification-subscriptions:anchor": want_anchor}]
    # A second anchor of the same dataspace, added below it.
    r = post(cps, MY_DS + "/anchors", {"anchor": [{"name": "other"}]})
    assert r.status_code == 201, r.text
    names = [a["name"] for a in get(cps, MY_DS).json()[0]["cps-notification-subscriptions:dataspace"]["anchors"]["anchor"]]
    assert sorted(names) == ["my-anchor", "other"]
    # A whole dataspace, with a topic and subscription ids.
    r = post(cps, "/dataspaces", {"dataspace": [{"name": "all-of-it", "topic": "t1", "subscriptionIds": ["s1", "s2"]}]})
    assert r.status_code == 201, r.text
    ds = get(cps, "/dataspaces/dataspace[@name='all-of-it']").json()[0]["cps-notification-subscriptions:dataspace"]
    assert ds["topic"] == "t1" and sorted(ds["subscriptionIds"]) == ["s1", "s2"]

    r = delete(cps, MY_ANCHOR)
    assert r.status_code == 204, r.text
    assert_cps_error(get(cps, MY_ANCHOR), 404)
    names = [a["name"] for a in get(cps, MY_DS).json()[0]["cps-notification-subscriptions:dataspace"]["anchors"]["anchor"]]
    assert names == ["other"]
    r = delete(cps, MY_DS)
    assert r.status_code == 204, r.text
    left = get(cps, "/dataspaces").json()[0][TOP]["dataspace"]
    assert [d["name"] for d in left] == ["all-of-it"]


def test_xpath_defaults_to_dataspaces(cps):
    """Without `xpath`, CPS's default `/dataspaces` (its OpenAPI; CPS's own
    controller test posts without one)."""
    assert cps.req("GET", SUBS).json() == [{TOP: {}}]
    r = cps.send("POST", SUBS, SAMPLE)
    assert r.status_code == 201, r.text
    assert get(cps, MY_ANCHOR).status_code == 200
    assert cps.req("GET", SUBS).json()[0][TOP]["dataspace"][0]["name"] == "my-dataspace"
    assert cps.req("DELETE", SUBS).status_code == 204
    # The container comes back at the next call.
    assert cps.req("GET", SUBS).json() == [{TOP: {}}]
    assert post(cps, "/dataspaces", SAMPLE).status_code == 201


def test_a_subscription_twice_is_409(cps):
    assert post(cps, "/dataspaces", SAMPLE).status_code == 201
    assert_cps_error(post(cps, "/dataspaces", {"dataspace": [{"name": "my-dataspace"}]}), 409)
    # Nothing changed.
    assert get(cps, MY_ANCHOR).status_code == 200


def test_bad_requests(cps):
    assert_cps_error(get(cps, "/dataspaces/dataspace[@name='x'"), 400)
    assert_cps_error(post(cps, "/dataspaces", "{not json"), 400)
    # Not the model's: an unknown member, a value of the wrong shape.
    assert_cps_error(post(cps, "/dataspaces", {"dataspace": [{"name": "d", "colour": "red"}]}), 400)
    assert_cps_error(post(cps, "/dataspaces", {"dataspace": [{"name": "d", "anchors": "a"}]}), 400)
    # Below a dataspace that is not subscribed.
    # CPS answers a write below a missing node 400 (its data endpoints do too).
    r = post(cps, "/dataspaces/dataspace[@name='nope']/anchors", {"anchor": [{"name": "a"}]})
    assert_cps_error(r, 400, "DataNode not found")
    assert_cps_error(get(cps, "/dataspaces/dataspace[@name='nope']"), 404)
    assert_cps_error(delete(cps, "/dataspaces/dataspace[@name='nope']"), 400, "DataNode not found")
    r = cps.send("PUT", SUBS, SAMPLE, params={"xpath": "/dataspaces"})
    assert r.status_code == 405, r.text
    # None of that stored anything.
    assert get(cps, "/dataspaces").json() == [{TOP: {}}]


def test_kept_as_cps_data(cps):
    """The subscriptions are the CPS-Admin dataspace's data: the admin and
    data endpoints see them, and they outlive a restart."""
    assert post(cps, "/dataspaces", SAMPLE).status_code == 201
    assert {"name": "CPS-Admin"} in cps.get("/v2/admin/dataspaces").json()
    anchors = cps.get("/v2/dataspaces/CPS-Admin/anchors").json()
    assert anchors == [
        {
            "name": "cps-notification-subscriptions",
            "dataspaceName": "CPS-Admin",
            "schemaSetName": "cps-notification-subscriptions",
        }
    ]
    via_data = cps.node("CPS-Admin", "cps-notification-subscriptions", "/dataspaces")
    assert via_data == get(cps, "/dataspaces").json()

    srv = cps.server
    assert srv.stop() == 0, srv.stderr_tail()
    srv.session = requests.Session()
    srv.start()
    assert get(cps, MY_ANCHOR).json()[0]["cps-notification-subscriptions:anchor"]["name"] == "my-anchor"
