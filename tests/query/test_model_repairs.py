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
    assert spelled("unitPrice", fields, leaf=False) is None
    assert spelled("price", fields) is None and spelled("last_name", fields) is None  # no such field
    assert spelled("Qty", {**fields, "Other.qty": None}) is None  # two nested fields so named: not guessed


def test_names_a_stage_makes_are_the_pipelines_own():
    """A `$group` total named like a field stays the group's, and is read so later (in any case); a
    `$project` alias, a compound group key, a `let` variable, a key relative to `$elemMatch` and the
    fields of documents a join's own pipeline shaped are left as written; the fields read are spelled."""
    schemas = _own_catalog().schemas
    pipeline = [
        {"$match": {"sports": {"$elemMatch": {"hours": {"$gt": 1}}}, "$or": [{"major": "x"}, {"tag": "y"}]}},
        {"$unwind": "$sports"},
        {"$group": {"_id": {"sport": "$sportname"}, "hours": {"$sum": "$hours"}, "majors": {"$push": "$major"}}},
        {"$sort": {"Hours": -1}},
        {"$lookup": {"from": "club", "let": {"stuid": "$_id"}, "pipeline": [], "as": "c"}},
        {"$project": {"Major": "$majors", "club": "$c.clubname", "_id": 0}},
    ]
    _, fixed = own_spelling("Student", pipeline, schemas)
    assert fixed == [
        {"$match": {"Sports": {"$elemMatch": {"hours": {"$gt": 1}}}, "$or": [{"Major": "x"}, {"Tags": "y"}]}},
        {"$unwind": "$Sports"},
        {
            "$group": {
                "_id": {"sport": "$Sports.SportName"},
                "hours": {"$sum": "$Sports.Hours"},
                "majors": {"$push": "$Major"},
            }
        },
        {"$sort": {"hours": -1}},  # the group's total, not Sports.Hours
        {"$lookup": {"from": "Club", "let": {"stuid": "$_id"}, "pipeline": [], "as": "c"}},
        # what a join's own pipeline shaped is its own: not the joined collection's ClubName
        {"$project": {"Major": "$majors", "club": "$c.clubname", "_id": 0}},
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
