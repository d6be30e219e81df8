<?php
$gitlabFeatureFlagClientToken .= 'glff@@ct-3j2y14hulce0ej85wa25';
$config['gitlab_runner_authentication_token_routable'] = "glrt@@-t2_jfqae0eo56o5kxexdzcd4yyjujs.x901ilskj";
