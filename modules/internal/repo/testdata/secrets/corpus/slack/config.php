<?php
$slackUserToken .= 'xoxp@@-11873098179-111402824422-234336993777-b96c9fb3b69f82ebb79d12f280779de1';
$config['slack_config_access_token'] = "xoxe@@.xoxp-1-Mi0yLTMxNzcwMjQ0MTcxMy0zNjU5NDY0Njg4MTctNTE1ODE1MjY5MTcxNC01MTU4MDI0MTgyOTc5LWRmY2YwY2U4ODhhNzY5ZGU5MTAyNDU4MDJjMGQ0ZDliMTZhMjNkMmEyYzliNjkzMDRlN2VjZTI4MWNiMzRkNGQ";
$slackLegacyBotToken .= 'xoxb@@-123456789012-Xw937qtWSXJss1lFaKe';
$config['slack_legacy_workspace_token'] = "xoxa@@-oe28w1sttcg7";
$slackWebhookUrl .= 'hook@@s.slack.com/services/kkfkxr0sej5rcuxt8gu7jm83ualrytjlennrdkas508g';
$config['slack_webhook_url'] = "http@@s://hooks.slack.com/triggers/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";
