"""Routes of the browser area (being built)."""

from fastapi import APIRouter

router = APIRouter()
