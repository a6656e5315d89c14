"""Code corrects a model's pipeline over a tenant's own collections: names and values it half remembers."""

from __future__ import annotations

from context_engine.query.model_repairs import own_spelling, spelled, typed_literals
from tests.query.test_llm_planner import _own_catalog


def test_names_are_matched_to_the_tenants_spelling_only_when_one_is_meant():
    schemas = _own_catalog().schemas
    pipeline = [
        {"$lookup": {"from": "clubs", "localField": "stuid", "foreignField": "members.stuid", "as": "Docs1"}},
        {"$unwind": "$docs1"},
        {"$match": {"$expr": {"$eq": ["$lname", "$$x"]}}},
        {"$project": {"lname": 1, "nickname": "$nickname", "club": "$docs1.clubname", "_id": 0}},
    ]
    collection, fixed = own_spelling("pupils", pipeline, schemas)
    assert collection == "Student"  # the collection the words "pupils" name
    assert fixed == [
        {"$lookup": {"from": "Club", "localField": "StuID", "foreignField": "Members.StuID", "as": "Docs1"}},
        {"$unwind": "$Docs1"},  # the join's own name, as the join spelled it
        {"$match": {"$expr": {"$eq": ["$Lname", "$$x"]}}},  # Student's Lname, not Club's LName
        # a field of what was joined is the joined collection's; a name nobody has is left as written
        {"$project": {"Lname": 1, "nickname": "$nickname", "club": "$Docs1.ClubName", "_id": 0}},
    ]
    # In a collection without it, `lname` is Lname or LName: not guessed; an unknown collection stays unknown.
    assert own_spelling("Club", [{"$project": {"lname": 1}}], schemas)[1] == [{"$project": {"LName": 1}}]
    assert own_spelling("tweets", [{"$project": {"lname": 1}}], schemas) == ("tweets", [{"$project": {"lname": 1}}])


def test_a_field_is_found_without_its_underscores_in_the_plural_or_without_its_parent_array():
    fields = dict.fromkeys(["first_name", "Room_Count", "Items.unit_price", "Items.qty", "qty_total", "Tags"])
    assert spelled("FirstName", fields) == "first_name"
    assert spelled("room_counts", fields) == "Room_Count"
    assert spelled("Tag", fields) == "Tags"
    assert spelled("unitPrice", fields) == "Items.unit_price"  # the one nested field of that name
    assert spelled("unitPrice", fields, reads=False) is None  # a name a stage makes is not a nested field
    assert spelled("price", fields) is None and spelled("last_name", fields) is None  # no such field
    assert spelled("Qty", {**fields, "Other.qty": None}) is None  # two nested fields so named: not guessed


def test_names_a_stage_makes_are_the_pipelines_own_after_it():
    """A `$group` total named like a nested field stays a name of the group; a `$project` alias made
    from an expression is read later as made, and a field read in that same stage is still spelled."""
    schemas = _own_catalog().schemas
    pipeline = [
        {"$unwind": "$sports"},
        {"$group": {"_id": "$sportname", "hours": {"$sum": "$hours"}}},
        {"$sort": {"hours": -1}},
        {"$project": {"major": "$major", "_id": 0}},
        {"$match": {"major": "x"}},
    ]
    _, fixed = own_spelling("Student", pipeline, schemas)
    assert fixed == [
        {"$unwind": "$Sports"},
        {"$group": {"_id": "$Sports.SportName", "hours": {"$sum": "$Sports.Hours"}}},
        {"$sort": {"hours": -1}},  # the group's total, not Sports.Hours
        {"$project": {"Major": "$Major", "_id": 0}},
        {"$match": {"Major": "x"}},
    ]


def test_a_compared_value_is_written_as_the_field_stores_it():
    schema = _own_catalog().schemas["Student"]
    pipeline = [
        {"$unwind": "$Sports"},
        {"$match": {"StuID": {"$in": ["1", "2"]}, "$or": [{"Sports.Hours": {"$gte": "2.5"}}, {"Fname": 7}]}},
        {"$group": {"_id": "$Major", "StuID": {"$sum": 1}}},
        {"$match": {"StuID": "3"}},  # after a group: the group's count, not the field
    ]
    assert typed_literals(pipeline, schema) == [
        {"$unwind": "$Sports"},
        {"$match": {"StuID": {"$in": [1, 2]}, "$or": [{"Sports.Hours": {"$gte": 2.5}}, {"Fname": "7"}]}},
        {"$group": {"_id": "$Major", "StuID": {"$sum": 1}}},
        {"$match": {"StuID": "3"}},
    ]
    assert typed_literals([{"$match": {"Fname": "Ann", "StuID": "one"}}], schema) == [
        {"$match": {"Fname": "Ann", "StuID": "one"}}
    ]
