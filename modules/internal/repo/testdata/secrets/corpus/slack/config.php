<?php
$slackUserToken .= 'xoxp@@-283316862324-298911817009-298923149681-44f585044dace54f5701618e97cd1c0b';
$config['slack_config_access_token'] = "xoxe@@.xoxp-1-Mi0yLTM0MTQwNDE0MDE3Ni0zNjU5NDY0Njg4MTctNTE4MjA3NTQ5NjA4MC01NDEyOTYyODY5NzUxLThhMTBjZmI1ZWIzMGIwNTg0ZDdmMDI5Y2UxNzVlZWVhYzU2ZWQyZTZiODNjNDZiMGUxMzRlNmNjNDEwYmQxMjQ";
$slackLegacyBotToken .= 'xoxb@@-47834520726-N3otsrwj8Cf99cs8GhiRZsX1';
$config['slack_legacy_workspace_token'] = "xoxa@@-3-7wwk349pgu6c";
$slackLegacyToken .= 'xoxo@@-523423-234243-234233-e039d02840a0b9379c';
$config['slack_webhook_url'] = "http@@://hooks.slack.com/workflows/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";
