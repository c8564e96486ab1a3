// Readiness probe run by start.sh with the broker's own jars (java source launcher, no build):
// the broker is ready once an admin client can create a topic and see it listed.
// Usage: java -cp 'libs/*' Ready.java <bootstrap> <timeoutSeconds>
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

public class Ready {
  private static final String PROBE_TOPIC = "tern.infra.readiness";

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    long deadline = System.currentTimeMillis() + Long.parseLong(args[1]) * 1000L;
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    String last = "no answer";
    try (Admin admin = Admin.create(props)) {
      while (System.currentTimeMillis() < deadline) {
        try {
          try {
            admin.createTopics(List.of(new NewTopic(PROBE_TOPIC, 1, (short) 1))).all().get();
          } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) throw e;
          }
          Set<String> names = admin.listTopics().names().get();
          if (names.contains(PROBE_TOPIC)) {
            System.exit(0);
          }
          last = "probe topic not listed yet";
        } catch (ExecutionException e) {
          last = String.valueOf(e.getCause());
        }
        Thread.sleep(500);
      }
    }
    System.err.println("broker at " + bootstrap + " not ready: " + last);
    System.exit(1);
  }
}
