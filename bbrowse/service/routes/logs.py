"""Routes of the logs area (being built)."""

from fastapi import APIRouter

router = APIRouter()
