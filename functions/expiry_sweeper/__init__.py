"""The retention expiry sweeper Lambda (EventBridge schedule)."""
