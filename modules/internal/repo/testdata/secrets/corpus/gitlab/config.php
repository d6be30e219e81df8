<?php
$gitlabFeatureFlagClientToken .= 'glff@@ct-3uxbbabdy6v4h5k7kb5d';
$config['gitlab_runner_authentication_token_routable'] = "glrt@@-t6_jcg6hkd9mfm9m7nrq5vzetytu7w.5xdbwwwb9";
