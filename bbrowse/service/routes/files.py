"""Routes of the files area (being built)."""

from fastapi import APIRouter

router = APIRouter()
